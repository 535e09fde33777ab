# The Arbiter server: the wheel with the server, models and postgres extras, run as a
# non-root user, healthy when /readyz answers 200. See docs/deploy.md, "Container".
#
#   docker build -t arbiter .
#   docker run -p 8000:8000 --security-opt seccomp=unconfined --security-opt apparmor=unconfined arbiter
#
# The sandbox makes its own namespaces, Landlock domain and seccomp filter inside the
# container; the engine's default seccomp and AppArmor profiles refuse the namespace
# calls it needs, hence the two options (docs/deploy.md says what each layer needs).
ARG PYTHON_VERSION=3.11
FROM python:${PYTHON_VERSION}-slim-bookworm

# The torch requirement: the wheel bounds it below only. Pick the build with the index,
# e.g. --build-arg PIP_INDEX_URL=https://download.pytorch.org/whl/cpu for a CPU image.
ARG TORCH=torch>=2.4
ARG EXTRAS=server,models,postgres
ARG PIP_INDEX_URL
ENV PIP_INDEX_URL=${PIP_INDEX_URL}

COPY . /src
RUN /src/deploy/container/install.sh /src /opt/arbiter "${EXTRAS}" "${TORCH}" \
    && rm -rf /src \
    && useradd --system --uid 10001 --user-group --home-dir /var/lib/arbiter --create-home arbiter

USER arbiter
WORKDIR /var/lib/arbiter
ENV PATH=/opt/arbiter/bin:${PATH} \
    ARBITER_HOST=0.0.0.0 \
    ARBITER_PORT=8000 \
    ARBITER_DATABASE_URL=sqlite:////var/lib/arbiter/arbiter.db
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import os, sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:%s/readyz' % os.environ['ARBITER_PORT'], timeout=4).status != 200)"]
CMD ["arbiter", "serve"]

# One image for all toolsel services; compose picks the service with `command`
# (selector | learner | indexer | migrate | status ...).
FROM python:3.11-slim

# The embedding model ships inside a Python package: HF_HUB_OFFLINE keeps anything from reaching for a hub.
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    HF_HUB_OFFLINE=1

# Dependencies first, in their own layer, so editing the source does not reinstall them.
COPY pyproject.toml /src/
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('/src/pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
 && pip install --no-cache-dir -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt

# Then the package itself (deps are already there).
COPY . /src
RUN pip install --no-cache-dir --no-deps /src && rm -rf /src

RUN useradd --system --create-home --uid 10001 toolsel
USER toolsel
WORKDIR /home/toolsel

ENTRYPOINT ["toolsel"]
CMD ["--help"]

# The socialapp image: the API (`socialapp serve`, on gunicorn: the default command) and the
# Celery workers (`socialapp worker ...`). Targets: `app` (the default) and `load` (app + locust).
# Nothing secret goes in: settings come from the environment at run time.

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
COPY pyproject.toml README.md ./
COPY socialapp socialapp
COPY workers workers
RUN pip wheel --no-deps --wheel-dir /wheels .

FROM python:3.11-slim AS base
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
RUN groupadd --system --gid 10001 socialapp \
    && useradd --system --uid 10001 --gid socialapp --home-dir /app --shell /usr/sbin/nologin socialapp
COPY --from=build /wheels /wheels
WORKDIR /app
# The same pinned versions as `make setup` (requirements.lock, refreshed by `make lock`).
COPY requirements.lock ./
RUN pip install -c requirements.lock /wheels/*.whl && rm -rf /wheels
# The measured unit costs `socialapp capacity` and the console's planner read.
COPY reports/benchmark/figures.json reports/benchmark/storage.json reports/benchmark/
COPY reports/workload/figures.json reports/workload/

FROM base AS load
RUN pip install -c requirements.lock "locust>=2.20"
COPY loadtest loadtest
USER socialapp
EXPOSE 8089
CMD ["locust", "-f", "loadtest/locustfile.py", "--host", "http://api:8000"]

FROM base AS app
ENV SOCIALAPP_HOST=0.0.0.0
USER socialapp
EXPOSE 8000
CMD ["socialapp", "serve"]

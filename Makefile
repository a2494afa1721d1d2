# `make run` and `make test` set everything up on a fresh Debian machine, then run.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

LOCK := requirements.lock

.PHONY: setup run test lint format system-deps benchmark benchmark-storage benchmark-instructions stream-benchmark stream-cluster-benchmark workload workload-paired workload-evidence reliability load stress lock

setup: system-deps $(STAMP)

# redis-server powers the timelines and the Celery broker; docker-compose validates the stack;
# chromium is the browser the page tests drive; valgrind counts Redis's instructions.
system-deps:
	@command -v redis-server >/dev/null 2>&1 && command -v docker-compose >/dev/null 2>&1 \
		&& command -v chromium >/dev/null 2>&1 && command -v callgrind_control >/dev/null 2>&1 \
		|| scripts/install-system-deps.sh

# Installs the exact versions CI tested ($(LOCK)); `make lock` refreshes them.
$(STAMP): pyproject.toml $(LOCK)
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c $(LOCK) -e '.[dev]'
	touch $(STAMP)

# Resolves pyproject.toml's dependencies afresh in a throwaway venv and pins what it installed.
lock:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	python3 -m venv "$$tmp"; \
	"$$tmp/bin/python" -m pip install --quiet --upgrade pip; \
	"$$tmp/bin/python" -m pip install --quiet -e '.[dev]'; \
	{ echo "# The exact versions CI tested, installed by make setup as pip constraints."; \
	  echo "# Python $$("$$tmp/bin/python" -c 'import sys; print(*sys.version_info[:2], sep=".")'); refresh with: make lock"; \
	  "$$tmp/bin/python" -m pip freeze --exclude-editable; } > $(LOCK)

run: setup
	$(VENV)/bin/socialapp serve

test: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/pytest

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: setup
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# Fan-out, read and memory figures against one redis-server, reported in reports/benchmark/
# (`make benchmark SIZE=smoke` for a quick run, in reports/benchmark-smoke/; OUT=DIR).
# The delivery section alone, with the ZADD ceiling and its targets, printed:
# `python -m loadtest.benchmark.delivery --size full [--out FILE.json]`.
SIZE ?= full
benchmark: setup
	@command -v redis-benchmark >/dev/null 2>&1 || scripts/install-system-deps.sh
	$(PY) -m loadtest.benchmark --size $(SIZE) $(if $(OUT),--out $(OUT))

# MongoDB's writes per post, follow and sign-up and its bytes per document, through /v1:
# reports/benchmark/storage.json (OUT=FILE), which `socialapp capacity` reads.
benchmark-storage: setup
	$(PY) -m loadtest.benchmark.storage $(if $(OUT),--out $(OUT))

# Redis's instructions per delivery (valgrind's callgrind, deaf to the machine's load), a post
# by an author in 100 lists with a followed tag against a plain one of as many deliveries:
# reports/benchmark/delivery_instructions.json (`SIZE=smoke`: benchmark-smoke/; OUT=FILE).
benchmark-instructions: setup
	$(PY) -m loadtest.benchmark.delivery_instructions --size $(SIZE) --out $(or $(OUT),\
		reports/benchmark$(if $(filter smoke,$(SIZE)),-smoke)/delivery_instructions.json)

# One streaming process holding 1,000 to 10,000 SSE streams, post-to-event latency in write and
# read mode and memory per stream: reports/benchmark/streaming/ (`SIZE=smoke`: benchmark-smoke/).
stream-benchmark: setup
	$(PY) -m loadtest.streaming --size $(SIZE) $(if $(OUT),--out $(OUT))

# Live streams' pub/sub on a 3+3 Redis Cluster, classic (PUBLISH) against sharded (SPUBLISH,
# SSUBSCRIBE): publish rate, delivery, cluster bus messages: reports/streaming-cluster/.
stream-cluster-benchmark: setup
	$(PY) -m loadtest.streaming.cluster_pubsub $(if $(OUT),--out $(OUT))

# What write, read, hybrid and adaptive cost at read:write ratios from 1:10 to 100:1, and
# where they cross: reports/workload/ (`make workload SIZE=smoke`: workload-smoke/).
workload: setup
	$(PY) -m loadtest.workload --size $(SIZE) $(if $(OUT),--out $(OUT))

# Adaptive against write and read in worlds run at the same time, paired round by round:
# reports/workload/paired/ (`SIZE=smoke`: workload-smoke/paired/).
workload-paired: setup
	$(PY) -m loadtest.workload --paired --size $(SIZE) $(if $(OUT),--out $(OUT))

# Adaptive given minutes of one mix (3:1), every event counted, against write and read run
# at the same time: reports/workload/evidence/ (medium graph; `EVIDENCE_SIZE=smoke`).
EVIDENCE_SIZE ?= medium
workload-evidence: setup
	$(PY) -m loadtest.workload --evidence --size $(EVIDENCE_SIZE) $(if $(OUT),--out $(OUT))

# Load with a worker SIGKILLed and the timelines and broker Redis crashed, then proof that no
# acknowledged post was lost or duplicated: reports/reliability/ (MINUTES=M, OUT=DIR).
# TOPOLOGY=cluster: the timelines on a Redis Cluster of 3+3, a master SIGKILLed in place of
# the timelines' crash: reports/reliability-cluster/.
MINUTES ?= 3
TOPOLOGY ?= single
reliability: setup
	$(PY) -m loadtest.reliability --minutes $(MINUTES) --topology $(TOPOLOGY) $(if $(OUT),--out $(OUT))

# The steady mix (loadtest/README.md) on fresh embedded servers at each size, and the
# saturation point without think time: reports/load/ (SIZES=3000,30000, OUT=DIR).
# MIX=newcomer: new accounts' first minutes (loadtest/newcomer.py), in reports/load/newcomer/;
# MIX=returning: returning readers (loadtest/returning.py), in reports/load/returning/.
SIZES ?= 3000,30000
load: setup
	$(PY) -m loadtest.load --sizes $(SIZES) $(if $(OUT),--out $(OUT)) $(if $(MIX),--mix $(MIX))

# The concurrency scenarios RUNS times on fresh in-process stacks, under CPU contention and
# with random delays at the race windows, every traversal checked: reports/stress/ (RUNS=200,
# SEED=S for the first run's seed, else a random one; OUT=DIR). Exit 1 on any violation.
RUNS ?= 200
stress: setup
	$(PY) -m loadtest.stress --runs $(RUNS) $(if $(SEED),--seed $(SEED)) $(if $(OUT),--out $(OUT))

# Lagwatch: `make run` starts the local stack, `make test` proves it on real parts.
# Every install step lives here or in scripts/ so a fresh machine (and CI) needs nothing else.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat requirements.txt pyproject.toml | cksum | cut -d' ' -f1)
# The real Apache Kafka broker the tests and benches run: the user's KAFKA_HOME, or the
# bundled Kafka 4.3.1 source build unpacked into .kafka/ (scripts/kafka-home.sh).
export KAFKA_HOME ?= $(CURDIR)/.kafka/kafka-4.3.1-kraft-srcbuild
# The oldest Kafka line Lagwatch supports: `make test` runs COMPAT_TESTS (collectors, commit
# log, membership: what depends on the broker's protocol versions and records) on it too. The
# JMX backend tests on the test double do not depend on the broker, so only the real-broker
# JMX test repeats.
export KAFKA_HOME_COMPAT ?= $(CURDIR)/.kafka/kafka-3.8.0-kraft-srcbuild
# Spark's Kafka connector for `[spark] source = "kafka"` (its tests and the sources bench): the
# user's folder of jars, or the bundled build for PySpark 4.3 unpacked into .spark-kafka/.
export SPARK_KAFKA_JARS ?= $(CURDIR)/.spark-kafka/spark-sql-kafka-4.3.0-srcbuild/jars
COMPAT_TESTS := $(filter-out tests/collectors/jmx/%,$(wildcard tests/collectors/test_*.py tests/collectors/*/test_*.py)) \
	tests/collectors/jmx/test_real_broker.py \
	tests/spark_jobs/test_commit_log_lake.py tests/spark_jobs/test_membership_status_lake.py \
	tests/test_membership_end_to_end.py tests/shell/test_up_on_a_configured_cluster.py

.PHONY: run test test-fast bench soak lint system-deps test-system-deps kafka-home spark-kafka-jars clean venv image

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps -e .
	@rm -f $(VENV)/.installed-*; touch $@

# Debian packages the product needs to run (a JDK for Spark and the JMX backends).
system-deps:
	@scripts/install-system-deps.sh run

# ... and what the tests need on top (chromium, Alertmanager).
test-system-deps:
	@scripts/install-system-deps.sh test

# Unpacked Apache Kafka at $KAFKA_HOME and $KAFKA_HOME_COMPAT (tests and benches start it on loopback).
kafka-home:
	@scripts/kafka-home.sh

# Spark's Kafka connector jars at $SPARK_KAFKA_JARS (the native source's tests and bench).
spark-kafka-jars:
	@scripts/spark-kafka-jars.sh

# The container image lagwatch:dev, with podman from a debootstrap base: no image registry needed
# (scripts/build-image.sh; docs/deployment.md).
image:
	@scripts/install-system-deps.sh image
	@scripts/build-image.sh

run: venv system-deps
	$(BIN)/lagwatch up

# Both runs always run; either failing fails the target.
test: venv test-system-deps kafka-home spark-kafka-jars
	@status=0; \
	$(BIN)/python -m pytest || status=1; \
	echo "== again on the oldest supported Kafka ($(KAFKA_HOME_COMPAT)): $(COMPAT_TESTS)"; \
	KAFKA_HOME=$(KAFKA_HOME_COMPAT) $(BIN)/python -m pytest $(COMPAT_TESTS) || status=1; \
	exit $$status

# Everything but the tests marked slow (for a quick loop while developing).
test-fast: venv test-system-deps kafka-home spark-kafka-jars
	$(BIN)/python -m pytest -m "not slow"

bench: venv system-deps kafka-home spark-kafka-jars
	$(BIN)/python -m bench

# `lagwatch up` on the real broker for SOAK_MINUTES (not part of `make bench`: it takes an hour);
# charts in bench/soak-report.html (bench/RECORDS.md, "Soak").
SOAK_MINUTES ?= 60
soak: venv system-deps test-system-deps kafka-home
	$(BIN)/python -m bench soak --minutes $(SOAK_MINUTES)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf lake state .kafka .spark-kafka lagwatch.duckdb test-artifacts bench/results.md bench/.data bench/soak-report.html

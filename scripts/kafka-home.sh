#!/usr/bin/env bash
# Makes sure $KAFKA_HOME (the main test run and the benches) and $KAFKA_HOME_COMPAT (the tests
# `make test` repeats on the oldest Kafka line Lagwatch supports) hold unpacked Apache Kafka
# distributions. A folder that already holds one is used as it is (an official download the user
# points at); an empty one named like a bundle beside the project ($KAFKA_BUNDLES, default
# ../shared/kafka: kafka-4.3.1-kraft-srcbuild.tar.gz and kafka-3.8.0-kraft-srcbuild.tar.gz) is
# unpacked from it, once. Nothing is downloaded.
set -euo pipefail
bundles="${KAFKA_BUNDLES:-../shared/kafka}"
for home in "${KAFKA_HOME:?KAFKA_HOME must be set by the Makefile}" "${KAFKA_HOME_COMPAT:-}"; do
  [ -n "$home" ] || continue
  compgen -G "$home/libs/kafka_*.jar" >/dev/null && continue
  bundle="$bundles/$(basename "$home").tar.gz"
  if [ ! -f "$bundle" ]; then
    echo "no Kafka at $home and no bundle at $bundle: set KAFKA_HOME (and KAFKA_HOME_COMPAT) to an unpacked Apache Kafka download" >&2
    continue  # the test run itself fails with the same message
  fi
  echo "unpacking $bundle into $(dirname "$home")"
  mkdir -p "$(dirname "$home")"
  tar xzf "$bundle" -C "$(dirname "$home")"
done
# Kafka Streams (the streams-group tests' application and StreamsGroupCommand, harness/kafka_streams.py):
# its bundle unpacked into $KAFKA_STREAMS_HOME when that folder has no jars yet.
streams="${KAFKA_STREAMS_HOME:-.kafka/kafka-streams-4.3.1-srcbuild}"
bundle="$bundles/$(basename "$streams").tar.gz"
if ! compgen -G "$streams/libs/kafka-streams-*.jar" >/dev/null && [ -f "$bundle" ]; then
  echo "unpacking $bundle into $(dirname "$streams")"
  mkdir -p "$(dirname "$streams")"
  tar xzf "$bundle" -C "$(dirname "$streams")"
fi

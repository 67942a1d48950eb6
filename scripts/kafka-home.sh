#!/usr/bin/env bash
# Makes sure $KAFKA_HOME holds an unpacked Apache Kafka distribution for the tests and benches.
# A KAFKA_HOME the user set is used as it is; otherwise the bundled source build beside the
# project (../shared/kafka) is unpacked once into .kafka/. Nothing is downloaded.
set -euo pipefail
home="${KAFKA_HOME:?KAFKA_HOME must be set by the Makefile}"
compgen -G "$home/libs/kafka_*.jar" >/dev/null && exit 0
bundle="${KAFKA_BUNDLE:-../shared/kafka/kafka-3.8.0-kraft-srcbuild.tar.gz}"
if [ ! -f "$bundle" ]; then
  echo "no Kafka at KAFKA_HOME=$home and no bundle at $bundle: set KAFKA_HOME to an unpacked Apache Kafka 3.x download" >&2
  exit 0  # the test run itself fails with the same message
fi
echo "unpacking $bundle into $(dirname "$home")"
mkdir -p "$(dirname "$home")"
tar xzf "$bundle" -C "$(dirname "$home")"

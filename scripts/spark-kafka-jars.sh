#!/usr/bin/env bash
# Makes sure $SPARK_KAFKA_JARS (the tests and benches of `[spark] source = "kafka"`) holds Spark's
# Kafka connector and the jars it needs beside PySpark's. A folder that already holds the connector
# is used as it is (jars the user fetched); an empty one named like a bundle beside the project
# ($SPARK_KAFKA_BUNDLES, default ../shared/spark-kafka: spark-sql-kafka-4.3.0-srcbuild.tar.gz, whose
# jars/ becomes $SPARK_KAFKA_JARS) is unpacked from it, once. Nothing is downloaded.
set -euo pipefail
bundles="${SPARK_KAFKA_BUNDLES:-../shared/spark-kafka}"
jars="${SPARK_KAFKA_JARS:?SPARK_KAFKA_JARS must be set by the Makefile}"
compgen -G "$jars/spark-sql-kafka-0-10_*.jar" >/dev/null && exit 0
home="$(dirname "$jars")"                      # .spark-kafka/spark-sql-kafka-4.3.0-srcbuild
bundle="$bundles/$(basename "$home").tar.gz"
if [ ! -f "$bundle" ]; then
  echo "no Spark Kafka connector in $jars and no bundle at $bundle: set SPARK_KAFKA_JARS to a folder holding spark-sql-kafka-0-10 and its runtime jars" >&2
  exit 0  # the tests of the native source fail with the same message
fi
echo "unpacking $bundle into $(dirname "$home")"
mkdir -p "$(dirname "$home")"
tar xzf "$bundle" -C "$(dirname "$home")"

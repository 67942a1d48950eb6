"""librdkafka client settings → the Java client options of Spark's native Kafka source.

The translated `sasl.jaas.config` is read back by the Java client's own JAAS parser
(kafka-clients' ``JaasConfig``, from the connector's jars), so the quoting is checked by the
code that will read it, not by a second guess of its grammar.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pyspark
import pytest

from harness.spark_kafka import spark_kafka_jars
from lagwatch.config import ConfigError, parse_config
from lagwatch.kafka import transport_client_config
from spark_jobs.kafka_options import java_client_options
from spark_jobs.session import classpath_settings

SASL_SSL = {"security.protocol": "sasl_ssl", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "lagwatch"}


def _config(client: dict[str, Any], environ: dict[str, str] | None = None, **spark: Any) -> Any:
    return parse_config(
        {
            "cluster": {"name": "t", "bootstrap_servers": "monitored:9092"},
            "transport": {"bootstrap_servers": "k1:9093", "client": client},
            "spark": spark,
        },
        environ=environ or {},
    )


def _java_options(client: dict[str, Any], environ: dict[str, str] | None = None, **spark: Any) -> dict[str, str]:
    config = _config(client, environ, **spark)
    return java_client_options(transport_client_config(config), config.spark.kafka_options)


def test_sasl_credentials_from_the_environment_become_a_jaas_line() -> None:
    options = _java_options(SASL_SSL, {"LAGWATCH_TRANSPORT_SASL_PASSWORD": "s3cret"})
    assert options == {
        "bootstrap.servers": "k1:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="lagwatch" password="s3cret";',
    }


def test_a_ca_file_becomes_a_pem_truststore_and_host_checks_can_be_turned_off(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    options = _java_options(
        {"security.protocol": "SSL", "ssl.ca.location": str(ca), "ssl.endpoint.identification.algorithm": "none"}
    )
    assert options["ssl.truststore.type"] == "PEM"
    assert options["ssl.truststore.location"] == str(ca)
    assert options["ssl.endpoint.identification.algorithm"] == ""


def test_a_pkcs12_keystore_keeps_its_name_and_gets_its_type_and_its_password_from_the_environment() -> None:
    options = _java_options(
        {"ssl.keystore.location": "/etc/kafka/client.p12"}, {"LAGWATCH_TRANSPORT_SSL_KEYSTORE_PASSWORD": "ks"}
    )
    assert options["ssl.keystore.location"] == "/etc/kafka/client.p12"
    assert options["ssl.keystore.type"] == "PKCS12"
    assert options["ssl.keystore.password"] == "ks"


@pytest.mark.parametrize(
    ("client", "named"),
    [
        ({"ssl.certificate.location": "/c.pem", "ssl.key.location": "/k.pem"}, "ssl.certificate.location"),
        ({"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc"}, "sasl.oauthbearer.method"),
        ({"ssl.crl.location": "/crl.pem"}, "ssl.crl.location"),
        ({"sasl.mechanism": "PLAIN", "sasl.username": "u"}, "sasl.password"),
    ],
)
def test_a_security_setting_without_a_java_form_is_refused_by_name(client: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError) as refused:
        _java_options(client)
    assert f"'{named}'" in str(refused.value)
    assert 'source = "python"' in str(refused.value), "the message says the way out"


def test_a_folder_of_cas_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"ssl\.ca\.location"):
        _java_options({"ssl.ca.location": str(tmp_path)})


def test_librdkafka_tuning_is_left_out_and_java_options_win() -> None:
    options = _java_options(
        {"socket.keepalive.enable": "true", "fetch.wait.max.ms": "100", "security.protocol": "SSL"},
        kafka_options={"ssl.truststore.location": "/etc/kafka/ca.jks", "security.protocol": "SASL_SSL"},
    )
    assert "socket.keepalive.enable" not in options
    assert options["fetch.max.wait.ms"] == "100"
    assert options["ssl.truststore.location"] == "/etc/kafka/ca.jks"
    assert options["security.protocol"] == "SASL_SSL"


def test_secrets_are_refused_in_kafka_options() -> None:
    with pytest.raises(ConfigError, match=r"sasl\.jaas\.config"):
        _config({}, kafka_options={"sasl.jaas.config": 'x required password="p";'})
    with pytest.raises(ConfigError, match=r"ssl\.truststore\.password"):
        _config({}, kafka_options={"ssl.truststore.password": "p"})


def test_jars_and_packages_become_spark_settings(tmp_path: Path) -> None:
    (tmp_path / "jars").mkdir()
    (tmp_path / "empty").mkdir()
    for name in ("b.jar", "a.jar", "README.txt"):
        (tmp_path / "jars" / name).write_text("")
    (tmp_path / "one.jar").write_text("")
    config = _config(
        {}, jars=[str(tmp_path / "jars"), str(tmp_path / "one.jar")], packages=["org.example:thing_2.13:1.0"]
    )
    settings = classpath_settings(config)
    assert settings["spark.jars"].split(",") == [str(tmp_path / "jars" / j) for j in ("a.jar", "b.jar")] + [
        str(tmp_path / "one.jar")
    ]
    assert settings["spark.jars.packages"] == "org.example:thing_2.13:1.0"
    with pytest.raises(ConfigError, match=r"spark\.jars: .*holds no \.jar"):
        classpath_settings(_config({}, jars=[str(tmp_path / "empty")]))
    with pytest.raises(ConfigError, match=r"spark\.packages"):
        _config({}, packages=["spark-sql-kafka"])


JAAS_READER = """
import java.util.Map;
import javax.security.auth.login.AppConfigurationEntry;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.security.JaasContext;
public class JaasRead {
    public static void main(String[] args) {
        JaasContext context = JaasContext.loadClientContext(Map.of("sasl.jaas.config", new Password(args[0])));
        AppConfigurationEntry entry = context.configurationEntries().get(0);
        System.out.println(entry.getLoginModuleName() + "\\n" + entry.getOptions().get("username")
            + "\\n" + entry.getOptions().get("password"));
    }
}
"""
#: The Java client's JAAS parser needs slf4j, which PySpark ships.
PYSPARK_JARS = Path(pyspark.__file__).parent / "jars"


def test_the_java_client_reads_back_credentials_with_quotes_and_backslashes(tmp_path: Path) -> None:
    password = 'p"a\\ss; word=x'
    options = _java_options(
        {"sasl.mechanism": "PLAIN", "sasl.username": 'us"er'}, {"LAGWATCH_TRANSPORT_SASL_PASSWORD": password}
    )
    source = tmp_path / "JaasRead.java"
    source.write_text(JAAS_READER)
    jars = [*spark_kafka_jars().glob("kafka-clients-*.jar"), *PYSPARK_JARS.glob("slf4j-api-*.jar")]
    classpath = ":".join(str(jar) for jar in jars)
    done = subprocess.run(
        [shutil.which("java") or "java", "-cp", classpath, str(source), options["sasl.jaas.config"]],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["org.apache.kafka.common.security.plain.PlainLoginModule", 'us"er', password]

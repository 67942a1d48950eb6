"""librdkafka client settings → the Java Kafka client options of Spark's native source.

Why: the `[transport]` / `[cluster]` `client` settings are written for librdkafka, which every
other Kafka client of Lagwatch uses, but Spark's `format("kafka")` runs the Java client. Most
settings share a name; the security ones do not: the Java client has no `sasl.username` /
`sasl.password` (it wants a `sasl.jaas.config` line), reads a CA file through a truststore and
spells `security.protocol` in capitals. A setting is therefore passed on under the same name,
renamed, translated, or refused with a ConfigError naming it and the way out: a security setting
that went missing would surface later as an authentication failure far from its cause, or as a
connection without TLS. Settings of librdkafka's own (queue sizes, `log_level`, …) have no
Java meaning and are left out with a warning. `[spark] kafka_options` adds Java settings
librdkafka has no name for; they win over the translation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path

from lagwatch.config import ConfigError

log = logging.getLogger(__name__)

#: Where a setting that cannot be translated can be given in the Java client's terms.
JAVA_OPTIONS_KEY = "spark.kafka_options"

#: Settings both clients read under the same name with the same meaning and values.
SAME_NAME = frozenset(
    {
        "bootstrap.servers",
        "client.id",
        "client.rack",
        "isolation.level",
        "fetch.min.bytes",
        "fetch.max.bytes",
        "max.partition.fetch.bytes",
        "metadata.max.age.ms",
        "reconnect.backoff.ms",
        "reconnect.backoff.max.ms",
        "retry.backoff.ms",
        "socket.connection.setup.timeout.ms",
        "sasl.mechanism",
        "sasl.kerberos.service.name",
        "ssl.key.password",
        "ssl.keystore.password",
    }
)

#: librdkafka name → Java name, values unchanged.
RENAMED = {
    "sasl.mechanisms": "sasl.mechanism",
    "fetch.wait.max.ms": "fetch.max.wait.ms",
    "socket.receive.buffer.bytes": "receive.buffer.bytes",
    "socket.send.buffer.bytes": "send.buffer.bytes",
}

#: JAAS login module per SASL mechanism that authenticates with a user name and password.
PASSWORD_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
KERBEROS_LOGIN_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
#: librdkafka's default mechanism when only sasl.username/password are set.
DEFAULT_MECHANISM = "GSSAPI"

#: Security settings with no Java counterpart, and what to do instead.
UNMAPPABLE = {
    "ssl.certificate.location": "use a PKCS#12 keystore instead (ssl.keystore.location, its password in "
    "LAGWATCH_TRANSPORT_SSL_KEYSTORE_PASSWORD), which both clients read",
    "ssl.key.location": "use a PKCS#12 keystore instead (ssl.keystore.location), which both clients read",
    "ssl.certificate.pem": "use a PKCS#12 keystore instead (ssl.keystore.location), which both clients read",
    "ssl.key.pem": "use a PKCS#12 keystore instead (ssl.keystore.location), which both clients read",
    "enable.ssl.certificate.verification": "the Java client always verifies the broker's certificate; "
    "give it the CA (ssl.ca.location) instead",
    "sasl.oauthbearer.method": "the Java client takes OAUTHBEARER through a login callback handler class: "
    f"set sasl.login.callback.handler.class and sasl.oauthbearer.token.endpoint.url in {JAVA_OPTIONS_KEY}",
}


def _unmappable(key: str, why: str) -> ConfigError:
    return ConfigError(
        f"[spark] source = \"kafka\": the librdkafka setting '{key}' has no equivalent in the Java Kafka "
        f'client Spark\'s native source runs: {why}; or use source = "python", which passes it to librdkafka as is.'
    )


def _jaas_quoted(value: str) -> str:
    """A JAAS option value in double quotes (the Java parser reads backslash escapes inside them)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _jaas_config(client: Mapping[str, str], mechanism: str) -> str | None:
    """`sasl.jaas.config` for the credentials librdkafka takes as separate settings, if any."""
    username, password = client.get("sasl.username"), client.get("sasl.password")
    if mechanism in PASSWORD_LOGIN_MODULES:
        if username is None and password is None:
            return None
        if username is None or password is None:
            missing = "sasl.username" if username is None else "sasl.password"
            raise _unmappable(missing, f"SASL {mechanism} needs both sasl.username and sasl.password")
        module = PASSWORD_LOGIN_MODULES[mechanism]
        return f"{module} required username={_jaas_quoted(username)} password={_jaas_quoted(password)};"
    if username is not None or password is not None:
        raise _unmappable("sasl.username", f"SASL {mechanism} takes no user name and password")
    if mechanism == "GSSAPI" and "sasl.kerberos.keytab" in client:
        principal = client.get("sasl.kerberos.principal", "kafkaclient")
        return (
            f"{KERBEROS_LOGIN_MODULE} required useKeyTab=true storeKey=true "
            f"keyTab={_jaas_quoted(client['sasl.kerberos.keytab'])} principal={_jaas_quoted(principal)};"
        )
    return None


def _truststore(location: str) -> dict[str, str]:
    """librdkafka's CA file (PEM) as a Java PEM truststore; a folder of CAs has no Java form."""
    if Path(location).is_dir():
        raise _unmappable("ssl.ca.location", f"{location} is a folder; give one PEM file holding the CA certificates")
    return {"ssl.truststore.type": "PEM", "ssl.truststore.location": location}


def _endpoint_identification(value: str) -> dict[str, str]:
    """librdkafka `none` turns host name checking off; Java spells that as an empty string."""
    return {"ssl.endpoint.identification.algorithm": "" if value.lower() == "none" else value.lower()}


#: librdkafka setting → a function of its value giving the Java settings.
TRANSLATED: dict[str, Callable[[str], dict[str, str]]] = {
    "security.protocol": lambda value: {"security.protocol": value.upper()},
    "ssl.ca.location": _truststore,
    "ssl.ca.pem": lambda pem: {"ssl.truststore.type": "PEM", "ssl.truststore.certificates": pem},
    "ssl.keystore.location": lambda path: {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": path},
    "ssl.endpoint.identification.algorithm": _endpoint_identification,
}

#: Read by `_jaas_config` from the whole client dict rather than one by one.
SASL_CREDENTIALS = frozenset({"sasl.username", "sasl.password", "sasl.kerberos.keytab", "sasl.kerberos.principal"})


def java_client_options(client: Mapping[str, str], extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Java client settings (without Spark's `kafka.` prefix) for a librdkafka `client` dict.

    `extra` (`[spark] kafka_options`) is added last and wins. Raises ConfigError for a security
    setting that cannot be translated (module docstring)."""
    client = {key: str(value) for key, value in client.items()}
    options: dict[str, str] = {}
    dropped: list[str] = []
    for key, value in client.items():
        if key in UNMAPPABLE:
            raise _unmappable(key, UNMAPPABLE[key])
        if key in SAME_NAME:
            options[key] = value
        elif key in RENAMED:
            options[RENAMED[key]] = value
        elif key in TRANSLATED:
            options.update(TRANSLATED[key](value))
        elif key in SASL_CREDENTIALS:
            continue
        elif key.startswith(("ssl.", "sasl.", "security.")):
            raise _unmappable(key, f"set its Java form in {JAVA_OPTIONS_KEY}")
        else:
            dropped.append(key)
    mechanism = client.get("sasl.mechanism", client.get("sasl.mechanisms", DEFAULT_MECHANISM)).upper()
    jaas = _jaas_config(client, mechanism)
    if jaas is not None:
        options["sasl.jaas.config"] = jaas
    if dropped:
        log.warning(
            "native Kafka source: librdkafka settings %s have no Java client meaning and are not applied", dropped
        )
    options.update(extra or {})
    return options

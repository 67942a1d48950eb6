"""Principals made during a test on the secured broker (harness/secure_kafka.py), each with exactly
the ACLs a test names: SCRAM credentials set by the super user, so a least-privilege reading is
measured on a user that holds nothing else."""

from __future__ import annotations

import secrets

from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

from harness.secure_kafka import ADMIN_USER, Acl, SecureKafkaBroker

SCRAM_ITERATIONS = 4096


def scram_user(broker: SecureKafkaBroker, user: str, acls: list[Acl]) -> str:
    """Create `user` (SCRAM-SHA-512 and -256) holding only `acls`; returns its password."""
    password = secrets.token_hex(12)
    admin = AdminClient(broker.client_settings(ADMIN_USER))
    for mechanism in (ScramMechanism.SCRAM_SHA_512, ScramMechanism.SCRAM_SHA_256):  # one per request (Kafka's rule)
        credential = ScramCredentialInfo(mechanism, SCRAM_ITERATIONS)
        upsert = UserScramCredentialUpsertion(user, credential, password.encode())
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(30)
    if acls:
        broker.grant(user, acls)
    return password

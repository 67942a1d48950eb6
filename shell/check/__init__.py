"""`lagwatch check`: a preflight that reads the config and reports one line per check.

Why a preflight: a missing ACL, a port in use or a JDK too old otherwise shows up minutes later
in one process's log. Each check is run the way the product would do it (a Kafka login with the
collectors' settings, the requests whose ACLs they need, a bind, a TCP connect) and sends no
data and no page. Modules: `outcome` (lines, exit code), `kafka_checks` (clusters), `acl_probe`
(what this principal may do), `acl_checks` (the table of `lagwatch.acls` against the probe),
`local_checks` (JDK, paths, ports), `network_checks` (JMX targets, receivers), `command` (the runner).
"""

"""The `lagwatch` exit codes: few, and each with one meaning, so scripts and supervisors can act on them.

README.md lists the same codes; a command returns nothing else.
"""

#: The command did what was asked.
OK = 0
#: It ran but did not succeed: `collect --once` left samples undelivered, `alerts --once` left
#: notifications pending, `status` found a component down, `up` saw a component fail, `sql` found
#: no lake, the Spark job's query failed, `check` printed a FAIL line (a cluster not reachable
#: included: its line names the cause).
FAILED = 1
#: The input was refused: a bad config (file and key named), a bad command line, a refused or
#: failing SQL query, `demo` pointed at a configured cluster (which Lagwatch only watches).
BAD_INPUT = 2
#: Kafka did not answer, or refused the login or its certificate was not trusted (cluster and cause named).
KAFKA_UNREACHABLE = 3
#: Stopped by Ctrl-C before it finished (128 + SIGINT).
INTERRUPTED = 130

"""The shell: the `lagwatch` command line and what starts and wires the parts.

It stands above every part (collectors, spark_jobs, dashboard, alerts, api) and the contracts
in `lagwatch/`, so it may import any of them by name; parts never import it. Part imports stay
inside the functions that need them, so `lagwatch sql` never loads Spark.
"""

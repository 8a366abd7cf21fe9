"""The scheduled refresh: run the DAG, compare with the last run, write a report."""

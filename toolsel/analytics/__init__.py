"""The event history for analysts and operators: frames from the store or a Parquet export, their metrics and
an HTML report."""

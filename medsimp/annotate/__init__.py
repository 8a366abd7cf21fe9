"""The alignment annotator: a self-contained page over aligned documents (`page`), a localhost
server for it (`server`), and the loop back from annotators' exports to gold (`ingest`)."""

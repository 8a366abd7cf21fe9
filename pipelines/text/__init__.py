"""Per-document text steps in plain Python: sections, Algorithm 1, UMLS linking, notes, radiology."""

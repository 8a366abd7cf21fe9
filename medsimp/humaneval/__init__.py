"""Human-evaluation kit: forms (HTML + spreadsheet), ingest with validation, tables, agreement, plots.

Protocols: Yang, Cherian and Vucetic's two-pronged evaluation of radiology simplifications
(expert form + layperson form with a Latin-square assignment) and Joseph et al.'s
MultiCochrane scales. Responses are long-format CSV rows
`form,rater_id,item_id,stage,system,question,answer` (see `schema`).
"""

"""The leaf every layer may import: errors, the row schema and its row-locator
columns, the graph-table model, deterministic ids and the name pattern.

Nothing here imports another graphkit subpackage.
"""

"""Questions asked of a loaded graph — sessions, subagent lineage, session
trees — written only against the store interface (:mod:`graphkit.enrich.base`)."""

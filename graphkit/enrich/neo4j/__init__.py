"""The Neo4j store: the driver-backed store, its pure Cypher builders, and a
local server started from the Maven jars in ``enrich/neo4j-launcher``."""

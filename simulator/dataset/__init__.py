"""Problems as data: RepoSim's own JSONL schema, R2E- and RepoST-shaped writers, readers."""

"""The harness curation screen: targets, their harnesses, coverage in the gutter, decisions."""

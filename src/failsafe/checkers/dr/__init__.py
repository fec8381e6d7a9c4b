"""The DR kind's checker: what moving a workload between clusters mirrored by MirrorMaker 2 cost and broke."""

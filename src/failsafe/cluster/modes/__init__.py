"""A cluster's mode: KRaft, ZooKeeper, and the live migration between them."""

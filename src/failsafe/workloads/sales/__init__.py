"""The sales simulator of seed 003: a smoothie bar's products, purchases and restocks on Kafka.

``catalogue`` the products; ``generator`` purchases (pure, deterministic per seed and instance);
``inventory`` stock levels and restock events; ``ledger`` what was acknowledged, on disk;
``simulator`` one instance's producer; ``run`` the instances as worker processes, with progress.
"""

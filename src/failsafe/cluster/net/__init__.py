"""Network rules: failsafe's own nftables table, the same rules on hosts, and the leash that
deletes them if failsafe dies.
"""

"""What runs at a directory: a lone cluster, a DR pair with MirrorMaker 2, or a cluster failsafe
only attached to.
"""

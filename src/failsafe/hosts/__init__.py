"""Hosts other than this machine, reached over SSH (docs/hosts.md).

inventory.py  hosts.toml and --hosts: addresses, SSH user and key, roles, racks (pure)
ssh.py        one reused paramiko connection per host: commands, files, one-line errors
probe.py      what a host has: kernel, Java, root, nftables, disk, and its clock against ours
processes.py  processes on a host: started in a session of their own, known by pid, start time and boot
testbed.py    test hosts on this machine: network namespaces, each with its own sshd
"""

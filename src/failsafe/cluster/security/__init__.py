"""Secured clusters: the security modes (modes), failsafe's own certificate authority (pki), a cluster's secrets
(store), a node's security properties (brokers) and the ACLs of failsafe's client principal (acls). What a client
needs to reach a secured listener is failsafe.tools.security.ClientSecurity, below cluster so that every client
family (tools, workloads, the pipeline) reads it from one place."""

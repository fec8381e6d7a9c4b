"""Share-group clients (KIP-932): the verifying share consumer and Kafka's VerifiableShareConsumer."""

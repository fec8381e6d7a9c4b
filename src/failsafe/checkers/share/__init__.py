"""The share kind's checker (KIP-932): every acknowledged write accepted, every redelivery explained."""

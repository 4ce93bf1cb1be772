"""Server processes: the fork server, the isolation layers, one instance, the warm pools and uids."""

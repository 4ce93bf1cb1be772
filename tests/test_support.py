"""The suite's own helpers, where a flaw shows up as some other test failing now and then."""

from tests.support.appserver import free_port


def test_a_port_is_handed_out_once_in_a_run() -> None:
    # The kernel offers unbound ports at random: 2000 looks here gave about 140 repeats.
    ports = [free_port() for _ in range(2000)]
    assert len(set(ports)) == len(ports)

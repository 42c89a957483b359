"""Kafka's ssl.principal.mapping.rules, as kraft.certificate reads them: the cases of
Kafka's own SslPrincipalMapper tests, and refusals naming what to fix."""

from __future__ import annotations

import pytest

from kmigrate.errors import ConfigError
from kmigrate.kraft.certificate import mapped

RULES = (
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, "
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, "
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, DEFAULT"
)


@pytest.mark.parametrize(
    ("name", "principal"),
    [
        ("CN=Duke,OU=ServiceUsers,O=Org,C=US", "User:Duke"),
        ("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "User:duke@sme"),
        ("cn=duke,ou=sme,dc=mycp,dc=com", "User:DUKE"),
        ("cN=duke,OU=JavaSoft,O=Sun Microsystems", "User:DUKE"),
        ("OU=JavaSoft,O=Sun Microsystems,C=US", "User:OU=JavaSoft,O=Sun Microsystems,C=US"),
    ],
)
def test_the_first_rule_that_matches_the_whole_name_gives_the_principal(name, principal):
    assert mapped(name, RULES) == principal


def test_no_rules_or_default_keep_the_distinguished_name():
    assert mapped("CN=kafka broker,O=Org", None) == "User:CN=kafka broker,O=Org"
    assert mapped("CN=kafka broker,O=Org", "DEFAULT") == "User:CN=kafka broker,O=Org"


def test_an_escaped_slash_is_part_of_the_pattern():
    assert mapped("CN=a/b", r"RULE:^CN=a\/(.*)$/$1/") == "User:b"


@pytest.mark.parametrize(
    ("rules", "said"),
    [
        ("RULE:^CN=(.*)$/$1/", "no rule maps"),  # matches nothing below
        ("RULE:^CN=(.*$/$1/", "cannot be read"),
        ("NOT A RULE", "cannot read the rule"),
    ],
)
def test_rules_that_map_nothing_or_cannot_be_read_are_refused(rules, said):
    with pytest.raises(ConfigError, match=said):
        mapped("OU=nobody", rules)

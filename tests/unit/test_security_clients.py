"""One client's security settings, spelled for each client family; checked whole, in one line; secrets hidden
where they could be written down."""

from __future__ import annotations

from pathlib import Path

import javaproperties
import pytest

from failsafe.errors import EXIT_USAGE
from failsafe.tools.security import (
    PLAINTEXT,
    REDACTED,
    ClientSecurity,
    ClientSecurityError,
    from_properties,
    jaas,
)


@pytest.fixture
def pem(tmp_path: Path) -> dict[str, Path]:
    files = {name: tmp_path / f"{name}.pem" for name in ("ca", "cert", "key", "store")}
    for name, path in files.items():
        path.write_text(f"-----BEGIN {name.upper()}-----\nAAAA\n-----END {name.upper()}-----\n")
    return files


def test_plaintext_says_only_the_protocol() -> None:
    assert PLAINTEXT.librdkafka() == {"security.protocol": "plaintext"}
    assert PLAINTEXT.java() == {"security.protocol": "PLAINTEXT"}
    assert PLAINTEXT.kcat_args() == ["-X", "security.protocol=plaintext"]


def test_sasl_ssl_with_scram_in_each_family(pem: dict[str, Path]) -> None:
    s = ClientSecurity("SASL_SSL", ca_file=pem["ca"], mechanism="SCRAM-SHA-512", username="producer", password='p"w\\d')
    assert s.librdkafka() == {
        "security.protocol": "sasl_ssl",
        "ssl.ca.location": str(pem["ca"]),
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "producer",
        "sasl.password": 'p"w\\d',
    }
    java = s.java()
    assert java["ssl.truststore.type"] == "PEM" and java["ssl.truststore.location"] == str(pem["ca"])
    assert java["sasl.mechanism"] == "SCRAM-SHA-512"
    assert java["sasl.jaas.config"] == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="producer" password="p\\"w\\\\d";'
    )
    assert s.spark_options() == {f"kafka.{k}": v for k, v in java.items()}
    assert s.kcat_args()[:4] == ["-X", "security.protocol=sasl_ssl", "-X", f"ssl.ca.location={pem['ca']}"]


def test_mutual_tls_gives_java_one_key_store_and_librdkafka_two_files(pem: dict[str, Path]) -> None:
    s = ClientSecurity("SSL", ca_file=pem["ca"], cert_file=pem["cert"], key_file=pem["key"], key_store=pem["store"])
    assert s.librdkafka()["ssl.certificate.location"] == str(pem["cert"])
    assert s.librdkafka()["ssl.key.location"] == str(pem["key"])
    assert s.java()["ssl.keystore.type"] == "PEM" and s.java()["ssl.keystore.location"] == str(pem["store"])


def test_a_java_key_store_alone_gives_librdkafka_the_same_file_twice(pem: dict[str, Path]) -> None:
    s = ClientSecurity("SSL", ca_file=pem["ca"], key_store=pem["store"])
    assert s.librdkafka()["ssl.certificate.location"] == s.librdkafka()["ssl.key.location"] == str(pem["store"])


def test_without_a_key_store_java_gets_the_pem_text_as_values(pem: dict[str, Path]) -> None:
    java = ClientSecurity("SSL", ca_file=pem["ca"], cert_file=pem["cert"], key_file=pem["key"]).java()
    assert java["ssl.keystore.certificate.chain"] == pem["cert"].read_text().strip()
    assert java["ssl.keystore.key"] == pem["key"].read_text().strip()
    assert "ssl.keystore.location" not in java


def test_the_java_config_file_reads_back_as_java_reads_it_and_only_its_owner_can(pem: dict[str, Path]) -> None:
    s = ClientSecurity(
        "SASL_SSL",
        ca_file=pem["ca"],
        cert_file=pem["cert"],
        key_file=pem["key"],
        mechanism="PLAIN",
        username="u",
        password="a=b\\c\nd",
    )
    path = s.write_java_config(pem["ca"].parent / "client.properties", {"client.id": "x"})
    assert javaproperties.loads(path.read_text()) == s.java() | {"client.id": "x"}
    assert path.stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        ({"protocol": "TLS"}, "security.protocol 'TLS' is not one of"),
        ({"protocol": "SASL_SSL", "mechanism": "GSSAPI", "username": "u", "password": "p"}, "GSSAPI"),
        ({"protocol": "SASL_PLAINTEXT", "mechanism": "PLAIN", "username": "u"}, "needs a SASL username and password"),
        ({"protocol": "SSL", "mechanism": "PLAIN"}, "uses no SASL"),
        ({"protocol": "PLAINTEXT", "ca_file": Path("/etc/hostname")}, "uses no TLS"),
        ({"protocol": "SSL", "cert_file": Path("/etc/hostname")}, "both its certificate file and its key file"),
        ({"protocol": "SSL", "ca_file": Path("/no/such/ca.pem")}, "CA file /no/such/ca.pem does not exist"),
    ],
)
def test_settings_that_cannot_work_are_one_line_and_exit_2(settings: dict, said: str) -> None:
    with pytest.raises(ClientSecurityError, match=said) as e:
        ClientSecurity(**settings)
    assert "\n" not in str(e.value) and e.value.exit_code == EXIT_USAGE


def test_the_password_is_in_no_repr_and_no_redacted_view(pem: dict[str, Path]) -> None:
    s = ClientSecurity("SASL_SSL", ca_file=pem["ca"], mechanism="SCRAM-SHA-512", username="u", password="s3cret-pw")
    assert "s3cret-pw" not in repr(s)
    assert s.redacted()["password"] == REDACTED and "s3cret-pw" not in str(s.redacted())
    assert s.redacted()["username"] == "u"


def test_a_java_client_config_reads_with_paths_relative_to_it(tmp_path: Path, pem: dict[str, Path]) -> None:
    props = {
        "security.protocol": "SASL_SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": pem["ca"].name,
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": jaas("SCRAM-SHA-512", "alice", 'a"b'),
    }
    (tmp_path / "client.properties").write_text(javaproperties.dumps(props, timestamp=False))
    s = from_properties(tmp_path / "client.properties")
    assert (s.protocol, s.ca_file, s.mechanism, s.username, s.password) == (
        "SASL_SSL",
        pem["ca"].resolve(),
        "SCRAM-SHA-512",
        "alice",
        'a"b',
    )


def test_a_librdkafka_client_config_reads_too(tmp_path: Path, pem: dict[str, Path]) -> None:
    (tmp_path / "client.properties").write_text(
        f"security.protocol=ssl\nssl.ca.location={pem['ca']}\n"
        f"ssl.certificate.location={pem['cert']}\nssl.key.location={pem['key']}\n"
    )
    s = from_properties(tmp_path / "client.properties")
    assert (s.protocol, s.cert_file, s.key_file) == ("SSL", pem["cert"], pem["key"])


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("security.protocol=SSL\nssl.truststore.type=JKS\nssl.truststore.location=x.jks\n", "PEM files only"),
        ("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n", "needs a SASL username and password"),
        ("security.protocol=SSL\nssl.ca.location=missing.pem\n", "missing.pem does not exist"),
    ],
)
def test_a_client_config_that_cannot_work_is_refused_in_one_line(tmp_path: Path, text: str, said: str) -> None:
    (tmp_path / "client.properties").write_text(text)
    with pytest.raises(ClientSecurityError, match=said) as e:
        from_properties(tmp_path / "client.properties")
    assert "\n" not in str(e.value)


def test_an_unreadable_client_config_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ClientSecurityError, match="cannot read"):
        from_properties(tmp_path / "absent.properties")

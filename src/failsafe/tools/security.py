"""A client's security settings, once, and their spelling for each client family failsafe runs.

``ClientSecurity`` is what a client needs to reach a secured listener: Kafka's ``security.protocol``, the CA
that signed the brokers' certificates, the client's own certificate (mutual TLS), and a SASL mechanism
with its user. Every family reads it from here:

    librdkafka (confluent-kafka, failsafe's workers)   librdkafka()      ssl.ca.location, sasl.username ...
    kcat                                               kcat_args()       -X with librdkafka's names
    Kafka's Java tools and clients, MirrorMaker 2      java()            ssl.truststore.type=PEM, sasl.jaas.config
    Spark's Kafka source and sink                      spark_options()   java()'s names prefixed kafka.

A password is in the object and in what these return (a client needs it), never in ``repr`` or
``redacted()``: what a run directory, a report or a log holds comes from ``redacted()``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path

import javaproperties

from failsafe.errors import UserError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")
REDACTED = "[hidden]"
SECRET_FILE_MODE = 0o600
SECRET_DIR_MODE = 0o700
_JAAS_MODULES = {
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
}


class ClientSecurityError(UserError):
    """Client security settings that cannot work, said in one line before anything runs (exit 2)."""


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    # Kafka's Java clients take the key and its chain as one PEM file (ssl.keystore.location).
    key_store: Path | None = None
    key_password: str | None = field(default=None, repr=False)
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem:
            raise ClientSecurityError(f"client security settings: {problem}")

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def problem(self) -> str | None:
        """What makes these settings unusable, or None."""
        if self.protocol not in PROTOCOLS:
            return f"security.protocol {self.protocol!r} is not one of {', '.join(PROTOCOLS)}"
        if self.uses_sasl:
            if self.mechanism not in MECHANISMS:
                return f"sasl.mechanism {self.mechanism!r} is not one of {', '.join(MECHANISMS)}"
            if not self.username or self.password is None:
                return f"{self.protocol} needs a SASL username and password"
        elif self.mechanism or self.username:
            return f"a SASL mechanism or user is set, but security.protocol {self.protocol} uses no SASL"
        if not self.uses_tls and (self.ca_file or self.cert_file or self.key_file or self.key_store):
            return f"certificate files are set, but security.protocol {self.protocol} uses no TLS"
        if bool(self.cert_file) != bool(self.key_file):
            return "a client certificate needs both its certificate file and its key file"
        for name, path in (
            ("CA file", self.ca_file),
            ("certificate file", self.cert_file),
            ("key file", self.key_file),
            ("key store", self.key_store),
        ):
            if path is not None and not Path(path).is_file():
                return f"{name} {path} does not exist"
        return None

    def librdkafka(self) -> dict[str, str]:
        """confluent-kafka's (librdkafka's) configuration properties."""
        conf = {"security.protocol": self.protocol.lower()}
        if self.ca_file:
            conf["ssl.ca.location"] = str(self.ca_file)
        # A Java key store in PEM (key and chain in one file) serves librdkafka as both: OpenSSL reads the blocks
        # it asks for and skips the others.
        cert, key = (self.cert_file, self.key_file) if self.cert_file else (self.key_store, self.key_store)
        if cert and key:
            conf["ssl.certificate.location"] = str(cert)
            conf["ssl.key.location"] = str(key)
            if self.key_password:
                conf["ssl.key.password"] = self.key_password
        if self.uses_sasl:
            conf |= {"sasl.mechanisms": str(self.mechanism), "sasl.username": str(self.username)}
            conf["sasl.password"] = str(self.password)
        return conf

    def kcat_args(self) -> list[str]:
        return [arg for key, value in self.librdkafka().items() for arg in ("-X", f"{key}={value}")]

    def java(self) -> dict[str, str]:
        """A Java client's properties (Kafka's tools' --command-config, MirrorMaker 2's, the JVM clients')."""
        props = {"security.protocol": self.protocol}
        if self.ca_file:
            props |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.ca_file)}
        if self.key_store:
            props |= {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(self.key_store)}
        elif self.cert_file and self.key_file:
            # Two files, as librdkafka takes them: Kafka reads the same PEM text as values (KIP-651).
            props |= {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.certificate.chain": Path(self.cert_file).read_text().strip(),
                "ssl.keystore.key": Path(self.key_file).read_text().strip(),
            }
        if self.key_password and (self.key_store or self.key_file):
            props["ssl.key.password"] = self.key_password
        if self.uses_sasl:
            props["sasl.mechanism"] = str(self.mechanism)
            props["sasl.jaas.config"] = jaas(str(self.mechanism), str(self.username), str(self.password))
        return props

    def write_java_config(self, path: Path, extra: dict[str, str] | None = None) -> Path:
        """java() (and ``extra``) as a properties file only its owner reads, as ``java.util.Properties`` loads it."""
        text = javaproperties.dumps(self.java() | (extra or {}), timestamp=False, sort_keys=False)
        return write_secret(path, text.encode())

    def spark_options(self) -> dict[str, str]:
        """Spark's Kafka source and sink take the Java client's properties prefixed ``kafka.``."""
        return {f"kafka.{key}": value for key, value in self.java().items()}

    def described(self) -> dict[str, str]:
        """The settings that say how the client reached the cluster, by Kafka's names, none of them a secret."""
        named = {
            "security.protocol": self.protocol,
            "sasl.mechanism": self.mechanism,
            "sasl.username": self.username,
            "ssl.certificate.location": str(self.cert_file or self.key_store or "") or None,
        }
        return {name: value for name, value in named.items() if value}

    def redacted(self) -> dict[str, str]:
        """What may be written to a run directory, a report or a log: every field, secrets hidden."""
        out: dict[str, str] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = REDACTED if f.name in ("password", "key_password") else str(value)
        return out


PLAINTEXT = ClientSecurity()


def secret_dir(path: Path) -> Path:
    """Make ``path`` (and its parents) and make it owner-only, also when it was there before."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(SECRET_DIR_MODE)
    return path


def write_secret(path: Path, data: bytes) -> Path:
    """Write ``data`` owner-only from the first byte: the file is created 0600, never widened then narrowed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, SECRET_FILE_MODE)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    path.chmod(SECRET_FILE_MODE)
    return path


def jaas(mechanism: str, username: str, password: str) -> str:
    """``sasl.jaas.config`` for a SASL user (quotes inside a value are escaped as JAAS reads them)."""
    module = _JAAS_MODULES[mechanism]
    return f'{module} required username="{_jaas_quote(username)}" password="{_jaas_quote(password)}";'


def _jaas_quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


# A client properties file may spell a setting as Kafka's Java clients do or as librdkafka does.
_SPELLINGS = {
    "ca_file": ("ssl.ca.location", "ssl.truststore.location"),
    "cert_file": ("ssl.certificate.location",),
    "key_file": ("ssl.key.location",),
    "key_store": ("ssl.keystore.location",),
    "key_password": ("ssl.key.password",),
    "mechanism": ("sasl.mechanism", "sasl.mechanisms"),
    "username": ("sasl.username",),
    "password": ("sasl.password",),
}
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def from_properties(path: Path) -> ClientSecurity:
    """A client's security settings from a properties file (``--attach``'s ``--client-config``), checked whole:
    a wrong setting is one line (ClientSecurityError, exit 2), before anything connects."""
    try:
        props = javaproperties.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ClientSecurityError(f"client security settings: cannot read {path}: {e}") from e
    for store in ("ssl.truststore.type", "ssl.keystore.type"):
        if props.get(store, "PEM").upper() != "PEM":
            raise ClientSecurityError(
                f"client security settings: {path}: {store}={props[store]}; failsafe reads PEM files only "
                "(a JKS or PKCS12 store converts with keytool or openssl)"
            )
    values: dict[str, object] = {"protocol": props.get("security.protocol", "PLAINTEXT").upper()}
    for name, keys in _SPELLINGS.items():
        found = [props[k] for k in keys if k in props]
        if found:
            values[name] = found[0]
    if "sasl.jaas.config" in props:
        options = {k: _jaas_unquote(v) for k, v in _JAAS_OPTION.findall(props["sasl.jaas.config"])}
        values.setdefault("username", options.get("username"))
        values.setdefault("password", options.get("password"))
    for name in ("ca_file", "cert_file", "key_file", "key_store"):
        if name in values:
            values[name] = (Path(path).parent / str(values[name])).resolve()
    if values.get("mechanism"):
        values["mechanism"] = str(values["mechanism"]).upper()
    return ClientSecurity(**values)  # type: ignore[arg-type]


def _jaas_unquote(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)

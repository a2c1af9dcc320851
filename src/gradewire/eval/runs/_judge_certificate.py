"""A judge's certificate, as the runs read it: the one in `gradewire.judges._certificate`.

The certificate, its check and the gate live with the judges, below every driver, so eval,
compare and the reward adapters (train, server, the trainer integrations) check a judge
with the same code; eval's names for them are these same objects.
"""

from __future__ import annotations

from gradewire.judges._certificate import (
    CERTIFICATE_VERSION,
    CertificateError,
    CertificateRequirement,
    JudgeCertificate,
    check_certificate,
    gate_certificates,
    json_ready,
    require_certificate,
    requirement_problems,
)

__all__ = [
    "CERTIFICATE_VERSION",
    "CertificateError",
    "CertificateRequirement",
    "JudgeCertificate",
    "check_certificate",
    "gate_certificates",
    "json_ready",
    "require_certificate",
    "requirement_problems",
]

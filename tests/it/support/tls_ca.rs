//! A certificate authority made by the test, and a server certificate it signs: what a
//! company's private CA or TLS-inspecting proxy looks like to warden.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use std::sync::Arc;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

pub struct TestCa {
    /// The CA certificate, PEM: what `caCert` or `SSL_CERT_FILE` should point at.
    pub ca_pem: String,
    /// A server configuration whose certificate the CA signed for `names`.
    pub server: Arc<ServerConfig>,
    /// That server certificate, PEM (for servers the test does not run in-process).
    pub leaf_pem: String,
    /// Its private key, PEM.
    pub leaf_key_pem: String,
}

impl TestCa {
    /// A new CA and a server certificate for `names` (DNS names or IP addresses).
    pub fn new(names: &[&str]) -> TestCa {
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "warden test private CA");
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();

        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut leaf = CertificateParams::new(names).unwrap();
        leaf.distinguished_name
            .push(DnType::CommonName, "warden test gateway");
        let leaf_key = KeyPair::generate().unwrap();
        let leaf_cert = leaf.signed_by(&leaf_key, &ca).unwrap();

        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let server = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![
                    CertificateDer::from(leaf_cert.der().to_vec()),
                    CertificateDer::from(ca.der().to_vec()),
                ],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
            )
            .unwrap();
        TestCa {
            ca_pem: ca.pem(),
            server: Arc::new(server),
            leaf_pem: leaf_cert.pem(),
            leaf_key_pem: leaf_key.serialize_pem(),
        }
    }
}

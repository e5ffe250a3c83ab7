// Kubernetes name rules (DNS-1123) as predicates: the one place the controller, the runtime and the hostpath
// provisioner check a node name, a namespace or a label-like name.

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** DNS-1123 label: what namespaces are (at most 63 lowercase alphanumerics and '-', alphanumeric at both ends). */
export function isDnsLabel(name: string): boolean {
  return name.length <= 63 && DNS_LABEL.test(name);
}

/** DNS-1123 subdomain: what Node and most object names are (dot-separated labels, at most 253 characters). */
export function isDnsSubdomain(name: string): boolean {
  return name.length <= 253 && DNS_SUBDOMAIN.test(name);
}

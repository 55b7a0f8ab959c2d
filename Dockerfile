# The Nexus container image: the static binaries `make build` makes, on nothing else. Build it
# with `make image`, which stages this file's context (docs/operations.md#the-container-image):
#   root/usr/local/bin/  every binary `make build` makes (nexus and the four plugins)
#   root/etc/            passwd and group (the user nexus, 65532), ssl/certs/ca-certificates.crt
#   root/tmp/            empty, mode 1777: go-plugin puts the plugins' sockets there
#   owned/data/          empty, mode 0700, the user's: the volume the server keeps its data in
# Each is copied as an entry of its parent, so its mode is kept.
# No base image is pulled. There is no shell, and no Node or Python: the MCP bridge reaches
# streamable-HTTP servers only.
FROM scratch

ARG VERSION=dev
ARG REVISION=unknown

LABEL org.opencontainers.image.title="Nexus" \
      org.opencontainers.image.description="The tool kernel of an AI-agent system" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"

COPY root/ /
COPY --chown=65532:65532 owned/ /

USER 65532:65532
ENV TMPDIR=/tmp
VOLUME ["/data"]
EXPOSE 7400

# nexus health exits 0 when /readyz answers ready (docs/operations.md#health); it asks
# http://127.0.0.1:7400 unless NEXUS_ADDR says otherwise (https, when the server serves TLS).
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/nexus", "health"]

ENTRYPOINT ["/usr/local/bin/nexus"]
CMD ["serve", "--listen", "0.0.0.0:7400", "--data-dir", "/data"]

# capstan's operator image: `docker build -t capstan:dev .` (or `podman build`) from a checkout.
# scripts/build-image.sh builds the same image with buildah where no base image can be pulled.
#
# Build stage: Debian 12 with the Rust toolchain capstan needs (rust-version in Cargo.toml).
FROM docker.io/library/rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin capstan \
 && scripts/image-rootfs.sh target/release/capstan /rootfs

# Runtime: nothing but the binary (without debug information, symbols kept: image-rootfs.sh
# strips it with the build image's objcopy), the shared libraries it loads, CA certificates
# and a passwd entry for the non-root user; no shell, no package manager.
FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/capstan"]
CMD ["operator"]
LABEL org.opencontainers.image.source="https://github.com/capstan-project/capstan" \
      org.opencontainers.image.description="capstan: release manager and operator for Cluster API cluster stacks" \
      org.opencontainers.image.licenses="Apache-2.0"

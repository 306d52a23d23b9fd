# The service's one image: `submission-service <api|webhook|local>` (the Helm chart runs
# `submission-service api` and `submission-service webhook` from it).
#
# Stage 1 builds dist/ and packs the package exactly as `npm pack` ships it (package.json
# "files"; test/packaging/pack.test.ts installs the same tarball), then installs production
# dependencies from the lockfile beside its contents. Stage 2 is the runtime: that tree
# and Node only, owned by root, run as an unprivileged user (uid 10001, the chart's
# runAsUser), so the read-only root filesystem the chart sets costs nothing.
# NODE_IMAGE is the runtime's base; NODE_BUILD_IMAGE the build stage's, which needs npm too
# (images/build.sh passes Debian-made bases for both: Node alone, and Node with npm).
ARG NODE_IMAGE=node:20-bookworm-slim
ARG NODE_BUILD_IMAGE=${NODE_IMAGE}

FROM ${NODE_BUILD_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npx tsc -p tsconfig.json \
 && mkdir /pack && npm pack --silent --pack-destination /pack \
 && mkdir /app && tar -xzf /pack/submission-service-*.tgz -C /app --strip-components=1 \
 && cp package-lock.json /app/ \
 && cd /app && npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm package-lock.json && npm cache clean --force

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HOME=/tmp \
    SUBMISSION_SERVICE_DATA_DIR=/var/lib/submission-service
COPY --from=build /app /opt/submission-service
RUN chmod 755 /opt/submission-service/bin/submission-service.js \
 && ln -s /opt/submission-service/bin/submission-service.js /usr/local/bin/submission-service \
 && mkdir -p /var/lib/submission-service /var/run/submission-service/certs \
 && chown 10001:10001 /var/lib/submission-service /var/run/submission-service/certs
USER 10001:10001
WORKDIR /opt/submission-service
# API 8080, webhook HTTPS 9443, the webhook's plain-HTTP metrics 9090.
EXPOSE 8080 9443 9090
ENTRYPOINT ["submission-service"]
CMD ["--help"]

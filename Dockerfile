# The service's one image: `submission-service <api|webhook|local>` (the Helm chart runs
# `submission-service api` and `submission-service webhook` from it).
#
# Stage `deps` installs the dependencies from the lockfile: all of them in /src for the build,
# the production ones alone in /app, the image's tree. Stage `build` builds dist/ and packs the
# package exactly as `npm pack` ships it (package.json "files"; test/packaging/pack.test.ts
# installs the same tarball), and unpacks it into /app beside those dependencies.
# The last stage is the runtime: that tree and Node only, owned by root, run as an unprivileged
# user (uid 10001, the chart's runAsUser), so the read-only root filesystem the chart sets costs nothing.
# NODE_IMAGE is the runtime's base; NODE_BUILD_IMAGE the build stages', which need npm too
# (images/build.sh passes Debian-made bases for both: Node alone, and Node with npm).
# DEPS_BASE is the base of stage `deps`. images/build.sh builds that stage alone once per
# lockfile and passes its result here: the install step finds the dependencies of these very
# package.json and package-lock.json already there and skips; any other base (the default, or
# one made from another lockfile) gets them installed afresh. (A build argument naming a stage,
# `FROM ${ARG}`, would be plainer, but buildah 1.28, Debian 12's, does not resolve one to a stage.)
ARG NODE_IMAGE=node:20-bookworm-slim
ARG NODE_BUILD_IMAGE=${NODE_IMAGE}
ARG DEPS_BASE=${NODE_BUILD_IMAGE}

FROM ${DEPS_BASE} AS deps
WORKDIR /src
COPY package.json package-lock.json ./
# /app keeps the package.json and lockfile it was installed from: what the check compares.
RUN if cmp -s package.json /app/package.json && cmp -s package-lock.json /app/package-lock.json \
      && [ -d node_modules ] && [ -d /app/node_modules ]; then \
      echo "dependencies of this lockfile already installed"; \
    else \
      rm -rf node_modules /app \
      && npm ci --no-audit --no-fund \
      && mkdir /app && cp package.json package-lock.json /app/ \
      && (cd /app && npm ci --omit=dev --ignore-scripts --no-audit --no-fund) \
      && npm cache clean --force; \
    fi

FROM deps AS build
COPY . .
RUN npx tsc -p tsconfig.json \
 && mkdir /pack && npm pack --silent --pack-destination /pack \
 && tar -xzf /pack/submission-service-*.tgz -C /app --strip-components=1 \
 && rm /app/package-lock.json

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

# PingStorage for Linux: build and test in a clean Debian bookworm with Swift 6.
# The same steps as .ci/run: the packages that the README's test command (dbus-test/test-all)
# needs, installed by the dbus-test/run modes it uses (--install-only: dbus-test/run decides,
# dbus-test/install-deps installs), a warnings-as-errors build, and the test command itself (which
# starts its own private buses, keyrings and portals; no daemon runs in the image). Its sandbox
# parts start bubblewrap, which needs user namespaces: docker run --privileged IMAGE.
FROM swift:6.3.1-bookworm

WORKDIR /src
COPY dbus-test/ dbus-test/
RUN dbus-test/run --install-only --tpm swift test \
    && dbus-test/run --install-only --sandbox swift test \
    && dbus-test/run --install-only --prompter swift test \
    && rm -rf /var/lib/apt/lists/*

COPY . .
RUN swift build --build-tests -Xswiftc -warnings-as-errors

CMD ["dbus-test/test-all"]

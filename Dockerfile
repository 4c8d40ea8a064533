# PingStorage for Linux: build and test in a clean Debian bookworm with Swift 6.
# The same steps as .ci/run: dbus-test/install-deps, a warnings-as-errors build, and the README's
# test command (which starts its own private bus and keyring; no daemon runs in the image).
FROM swift:6.3.1-bookworm

WORKDIR /src
COPY dbus-test/ dbus-test/
RUN dbus-test/install-deps build harness test-clients fake-service dbus-test/providers/gnome-keyring.needs && rm -rf /var/lib/apt/lists/*

COPY . .
RUN swift build --build-tests -Xswiftc -warnings-as-errors

CMD ["dbus-test/run", "--isolated", "swift", "test"]

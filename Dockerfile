# PingStorage for Linux: build and test in a clean Debian bookworm with Swift 6.
# The same steps as .ci/run: the packages that the README's test command needs, installed by that
# very command (--install-only: dbus-test/run decides, dbus-test/install-deps installs), a
# warnings-as-errors build, and the test command itself (which starts its own private bus and
# keyring; no daemon runs in the image).
FROM swift:6.3.1-bookworm

WORKDIR /src
COPY dbus-test/ dbus-test/
RUN dbus-test/run --install-only --isolated swift test && rm -rf /var/lib/apt/lists/*

COPY . .
RUN swift build --build-tests -Xswiftc -warnings-as-errors

CMD ["dbus-test/run", "--isolated", "swift", "test"]

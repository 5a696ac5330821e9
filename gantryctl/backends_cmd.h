/*
 * `gantryctl backends`: every storage backend's live state beside Gantry's
 * reservations, from gantry-scheduler's metrics endpoint.
 */
#pragma once

/* Runs `gantryctl backends ...` (@argv after "backends"); returns the exit code. */
int gantry_backends_main(int argc, char **argv);

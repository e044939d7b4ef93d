#!/bin/sh
exec echo "run $@"

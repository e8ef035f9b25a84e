"""The server: the Flask app and its upload route (app, api, upload, guard, bodies, encodings),
judging (pipeline, workers, gather), what runs beside the requests (jobs, rejections, reverify,
rulesets), the ops and admin routes, and the process model (serve, wsgi, reaper), with the
server's settings (config). It composes the layers below: storage, analysis, the dashboard."""

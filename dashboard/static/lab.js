// The Lab page's "Start a lab run": POST the form with the token, then poll the job's
// progress (a small JSON answer) until it is stored, failed or cancelled.
(function () {
  const form = document.getElementById("lab-start-form");
  if (!form) return;
  const line = document.getElementById("lab-job");
  const cancel = document.getElementById("lab-cancel");
  let job = null;
  let token = "";

  function show(j) {
    const rate = j.rate ? `, ${j.rate.toFixed(1)} pairs/s` : "";
    let text = `${j.run}: ${j.status}, ${j.done} of ${j.total} pairs${rate}`;
    if (j.run_id) text += `; lab run ${j.run_id}: reload the page to see it`;
    if (j.message) text += ` (${j.message})`;
    line.textContent = text;
    line.dataset.status = j.status;
    cancel.hidden = j.status !== "running";
  }

  async function poll() {
    if (!job) return;
    const r = await fetch(`/dashboard/lab/runs/${job}`, {credentials: "same-origin"});
    const j = await r.json();
    show(j);
    if (j.status === "running" || j.status === "storing") setTimeout(poll, 1000);
  }

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    token = f.get("token");
    const body = {
      candidate: f.get("candidate"), base: f.get("base"), games: Number(f.get("games")),
      levels: f.get("levels"), board: Number(f.get("board")), powers: f.get("powers") === "on",
      seed: Number(f.get("seed")),
    };
    const r = await fetch("/dashboard/lab/runs", {
      method: "POST", credentials: "same-origin", body: JSON.stringify(body),
      headers: {"Content-Type": "application/json", "Authorization": `Bearer ${token}`},
    });
    const j = await r.json();
    if (r.status !== 202) {
      line.textContent = `Not started: ${j.message}`;
      line.dataset.status = "refused";
      return;
    }
    job = j.id;
    show(j);
    setTimeout(poll, 500);
  });

  cancel.addEventListener("click", async () => {
    if (!job) return;
    const r = await fetch(`/dashboard/lab/runs/${job}/cancel`, {
      method: "POST", credentials: "same-origin", headers: {"Authorization": `Bearer ${token}`},
    });
    show(await r.json());
  });
})();

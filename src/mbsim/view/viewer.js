// mbsim replay player: draws the recorded body poses of a results file with three.js.
// Data: the JSON in #mbsim-data (see src/mbsim/view/html.py). World frame z up, metres.
// URL parameters: t=SECONDS shows that time, paused; collision=1 shows collision shapes;
// play=1 starts playing; speed=X sets the playback speed.
// Test hook: window.mbsimView (setTime, frame, camera matrix); <html data-ready="1"> after the
// first render, data-frame / data-time the frame shown.
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("mbsim-data").textContent);

  function bytes(s) {
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  }
  const f32 = (s) => new Float32Array(bytes(s));
  const f64 = (s) => new Float64Array(bytes(s));
  const u32 = (s) => new Uint32Array(bytes(s));

  const times = f64(D.times);
  const poses = f32(D.poses);
  const nb = D.bodies.length;
  const nf = D.n_frames;
  const contacts = {
    start: u32(D.contacts.start), point: f32(D.contacts.point),
    normal: f32(D.contacts.normal), impulse: f32(D.contacts.impulse),
  };

  THREE.Object3D.DEFAULT_UP.set(0, 0, 1);
  const host = document.getElementById("view");
  const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(window.devicePixelRatio || 1);
  host.appendChild(renderer.domElement);
  const scene = new THREE.Scene();
  scene.background = new THREE.Color(0xdfe5ec);
  scene.add(new THREE.HemisphereLight(0xffffff, 0x8d8d8d, 1.6));
  const sun = new THREE.DirectionalLight(0xffffff, 1.8);
  sun.position.set(3, -2, 5);
  scene.add(sun);
  const camera = new THREE.PerspectiveCamera(40, 1, 0.01, 1000);
  const controls = new THREE.OrbitControls(camera, renderer.domElement);
  controls.enableDamping = false;

  // ---------------------------------------------------------------- shapes
  const meshGeoms = D.meshes.map((m) => {
    const g = new THREE.BufferGeometry();
    g.setAttribute("position", new THREE.BufferAttribute(f32(m.positions), 3));
    g.setIndex(new THREE.BufferAttribute(u32(m.indices), 1));
    g.computeVertexNormals();
    return g;
  });
  function geometryOf(s) {
    const p = s.params;
    if (s.kind === "box") return new THREE.BoxGeometry(p[0], p[1], p[2]);
    if (s.kind === "sphere") return new THREE.SphereGeometry(p[0], 32, 16);
    if (s.kind === "cylinder") return new THREE.CylinderGeometry(p[0], p[0], p[1], 32).rotateX(Math.PI / 2);
    if (s.kind === "capsule") return new THREE.CapsuleGeometry(p[0], p[1], 8, 24).rotateX(Math.PI / 2);
    return meshGeoms[s.mesh];
  }
  const bodyGroups = [];
  for (let b = 0; b < nb; b++) {
    const g = new THREE.Group();
    g.matrixAutoUpdate = false;
    scene.add(g);
    bodyGroups.push(g);
  }
  const staticGroup = new THREE.Group();
  scene.add(staticGroup);
  const visuals = [], collisions = [];
  for (const s of D.shapes) {
    const c = s.rgba;
    const mat = s.role === "visual"
      ? new THREE.MeshStandardMaterial({ color: new THREE.Color(c[0], c[1], c[2]), roughness: 0.6, metalness: 0.1,
          transparent: c[3] < 1, opacity: c[3] })
      : new THREE.MeshBasicMaterial({ color: 0xff7a00, wireframe: true, transparent: true, opacity: 0.6 });
    const obj = new THREE.Mesh(geometryOf(s), mat);
    obj.matrixAutoUpdate = false;
    const m = new THREE.Matrix4();
    m.set(...s.pose);
    if (s.kind === "mesh") m.multiply(new THREE.Matrix4().makeScale(s.params[0], s.params[1], s.params[2]));
    obj.matrix.copy(m);
    obj.userData.link = s.link;
    (s.body < 0 ? staticGroup : bodyGroups[s.body]).add(obj);
    (s.role === "visual" ? visuals : collisions).push(obj);
  }
  const params = new URLSearchParams(window.location.search);
  const showCol = document.getElementById("showcol");
  showCol.checked = visuals.length === 0 || params.get("collision") === "1";
  function applyVisibility() {
    for (const o of collisions) o.visible = showCol.checked;
  }
  showCol.addEventListener("change", () => { applyVisibility(); render(); });
  applyVisibility();

  // ---------------------------------------------------------------- poses
  const q = new THREE.Quaternion(), pos = new THREE.Vector3(), one = new THREE.Vector3(1, 1, 1);
  function setFrame(k) {
    const base = k * nb * 7;
    for (let b = 0; b < nb; b++) {
      const o = base + b * 7;
      pos.set(poses[o], poses[o + 1], poses[o + 2]);
      q.set(poses[o + 4], poses[o + 5], poses[o + 6], poses[o + 3]).normalize();
      bodyGroups[b].matrix.compose(pos, q, one);
      bodyGroups[b].matrixWorldNeedsUpdate = true;
    }
  }

  // ---------------------------------------------------------------- framing, floor
  // The camera frames the moving bodies (at the first frame, and every body position of the
  // run), plus the environments unless they dwarf the robots (a 40 m floor around a 1 m arm).
  setFrame(0);
  scene.updateMatrixWorld(true);
  const box = new THREE.Box3();
  for (const g of bodyGroups) box.expandByObject(g);
  for (let k = 0; k < nf; k++) {
    for (let b = 0; b < nb; b++) {
      const o = (k * nb + b) * 7;
      box.expandByPoint(pos.set(poses[o], poses[o + 1], poses[o + 2]));
    }
  }
  const staticBox = new THREE.Box3().setFromObject(staticGroup);
  const diag = (b) => b.isEmpty() ? 0 : b.getSize(new THREE.Vector3()).length();
  if (box.isEmpty() || diag(staticBox) <= 2 * diag(box)) box.union(staticBox);
  if (box.isEmpty()) box.set(new THREE.Vector3(-1, -1, 0), new THREE.Vector3(1, 1, 1));
  const center = box.getCenter(new THREE.Vector3());
  const radius = Math.max(0.05, 0.5 * box.getSize(new THREE.Vector3()).length());
  if (D.floor) {
    const size = Math.max(2, 4 * radius);
    const floor = new THREE.Mesh(new THREE.PlaneGeometry(size, size),
      new THREE.MeshStandardMaterial({ color: 0x7d8a96, roughness: 0.9 }));
    floor.position.set(center.x, center.y, -1e-4 * size);
    scene.add(floor);
    const grid = new THREE.GridHelper(size, Math.round(size / Math.pow(10, Math.floor(Math.log10(size / 4)))), 0x56626d, 0x6c7883);
    grid.rotateX(Math.PI / 2);
    grid.position.set(center.x, center.y, 1e-4 * size);
    scene.add(grid);
  }
  // View from the front-right and above, or the first of a turn of other azimuths from which
  // no environment shape (a wall) hides the centre of the scene.
  const ray = new THREE.Raycaster();
  const staticMeshes = [];
  staticGroup.traverse((o) => { if (o.isMesh) staticMeshes.push(o); });
  let dir = null;
  for (let i = 0; i < 8 && dir === null; i++) {
    const az = -Math.atan2(1.6, 1.0) + (i % 2 ? -1 : 1) * Math.ceil(i / 2) * Math.PI / 4;
    const d = new THREE.Vector3(Math.cos(az), Math.sin(az), 0.55).normalize();
    const eye = center.clone().addScaledVector(d, 2.2 * radius);
    ray.set(eye, d.clone().negate());
    ray.far = 2.2 * radius;
    if (ray.intersectObjects(staticMeshes, false).length === 0) dir = d;
  }
  if (dir === null) dir = new THREE.Vector3(1.0, -1.6, 0.9).normalize();
  camera.position.copy(center).addScaledVector(dir, 2.2 * radius);
  camera.near = radius / 200;
  camera.far = radius * 200;
  controls.target.copy(center);
  controls.update();

  // ---------------------------------------------------------------- contacts
  const conGroup = new THREE.Group();
  scene.add(conGroup);
  const showCon = document.getElementById("showcon");
  showCon.addEventListener("change", () => { conGroup.visible = showCon.checked; render(); });
  let maxImpulse = 0;
  for (let i = 0; i < contacts.impulse.length; i += 3) {
    maxImpulse = Math.max(maxImpulse, Math.hypot(contacts.impulse[i], contacts.impulse[i + 1], contacts.impulse[i + 2]));
  }
  const dotGeom = new THREE.SphereGeometry(radius * 0.012, 12, 8);
  const dotMat = new THREE.MeshBasicMaterial({ color: 0xffd600, depthTest: false });
  const pool = [];
  function contactItem(i) {
    while (pool.length <= i) {
      const dot = new THREE.Mesh(dotGeom, dotMat);
      const nArrow = new THREE.ArrowHelper(new THREE.Vector3(0, 0, 1), new THREE.Vector3(), 1, 0x1e88e5);
      const iArrow = new THREE.ArrowHelper(new THREE.Vector3(0, 0, 1), new THREE.Vector3(), 1, 0xe53935);
      // drawn over the bodies: a contact point lies on (or inside) the surfaces it joins
      for (const o of [dot, nArrow.line, nArrow.cone, iArrow.line, iArrow.cone]) {
        o.material.depthTest = false;
        o.renderOrder = 10;
      }
      conGroup.add(dot, nArrow, iArrow);
      pool.push({ dot, nArrow, iArrow });
    }
    return pool[i];
  }
  const v1 = new THREE.Vector3(), v2 = new THREE.Vector3();
  function setContacts(k) {
    const a = contacts.start[k], b = contacts.start[k + 1];
    const nLen = 0.08 * radius;
    for (let i = a; i < b; i++) {
      const it = contactItem(i - a);
      v1.fromArray(contacts.point, 3 * i);
      it.dot.position.copy(v1);
      it.nArrow.position.copy(v1);
      it.nArrow.setDirection(v2.fromArray(contacts.normal, 3 * i).normalize());
      it.nArrow.setLength(nLen, 0.3 * nLen, 0.15 * nLen);
      v2.fromArray(contacts.impulse, 3 * i);
      const mag = v2.length();
      it.iArrow.position.copy(v1);
      if (mag > 1e-6 * maxImpulse) {
        const len = 0.2 * radius * mag / maxImpulse;
        it.iArrow.setDirection(v2.normalize());
        it.iArrow.setLength(len, Math.min(0.3 * len, 0.03 * radius), Math.min(0.15 * len, 0.015 * radius));
        it.iArrow.visible = true;
      } else {
        it.iArrow.visible = false;
      }
      it.dot.visible = it.nArrow.visible = true;
    }
    for (let i = b - a; i < pool.length; i++) {
      pool[i].dot.visible = pool[i].nArrow.visible = pool[i].iArrow.visible = false;
    }
  }

  // ---------------------------------------------------------------- timeline
  const KIND_COLORS = { contact_begin: "#43a047", contact_end: "#90a4ae", impact: "#e53935",
    stick: "#1e88e5", slip: "#fb8c00" };
  const t0 = times[0], t1 = times[nf - 1];
  const span = t1 > t0 ? t1 - t0 : 1;
  const marks = document.getElementById("marks");
  const counts = {};
  const frag = document.createDocumentFragment();
  D.events.time.forEach((t, i) => {
    const kind = D.events.kind[i];
    counts[kind] = (counts[kind] || 0) + 1;
    const m = document.createElement("div");
    m.style.left = (100 * (t - t0) / span) + "%";
    m.style.background = KIND_COLORS[kind] || "#000";
    const imp = D.events.impulse[i];
    m.title = kind + " at t = " + t.toFixed(4) + " s: " + D.events.a[i] + " / " + D.events.b[i] +
      (imp !== null && kind === "impact" ? ", impulse " + imp.toPrecision(3) + " N s" : "");
    frag.appendChild(m);
  });
  marks.appendChild(frag);
  const legend = document.getElementById("legend");
  const lines = Object.keys(counts).map((k) =>
    '<span class="k" style="background:' + (KIND_COLORS[k] || "#000") + '"></span>' + k + " " + counts[k]);
  for (const n of D.notes) lines.push("<small>" + n.replace(/&/g, "&amp;").replace(/</g, "&lt;") + "</small>");
  legend.innerHTML = lines.join("<br>");
  if (!legend.innerHTML) legend.style.display = "none";
  document.getElementById("title").textContent = D.title + (D.status !== "complete" ? " (" + D.status + ")" : "");

  // ---------------------------------------------------------------- player
  const slider = document.getElementById("slider");
  slider.max = String(nf - 1);
  const timeLabel = document.getElementById("time");
  const playBtn = document.getElementById("play");
  const speedSel = document.getElementById("speed");
  let frame = 0, simTime = t0, playing = false, lastWall = null;

  function frameAt(t) { // last frame with times[k] <= t
    let lo = 0, hi = nf - 1;
    if (t >= times[hi]) return hi;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (times[mid] <= t) lo = mid; else hi = mid - 1;
    }
    return lo;
  }
  function show(k) {
    frame = Math.max(0, Math.min(nf - 1, k));
    setFrame(frame);
    setContacts(frame);
    slider.value = String(frame);
    timeLabel.textContent = "t = " + times[frame].toFixed(4) + " s / " + t1.toFixed(3) + " s";
    document.documentElement.setAttribute("data-frame", String(frame));
    document.documentElement.setAttribute("data-time", String(times[frame]));
    render();
  }
  function setPlaying(p) {
    playing = p;
    playBtn.innerHTML = p ? "&#10074;&#10074;" : "&#9654;";
    lastWall = null;
    if (p && frame >= nf - 1) simTime = t0;
    if (p) requestAnimationFrame(tick);
  }
  function tick(now) {
    if (!playing) return;
    if (lastWall !== null) simTime += (now - lastWall) / 1000 * parseFloat(speedSel.value);
    lastWall = now;
    if (simTime >= t1) { simTime = t1; show(nf - 1); setPlaying(false); return; }
    const k = frameAt(simTime);
    if (k !== frame) show(k);
    requestAnimationFrame(tick);
  }
  function step(d) { setPlaying(false); show(frame + d); simTime = times[frame]; }
  playBtn.addEventListener("click", () => setPlaying(!playing));
  document.getElementById("back").addEventListener("click", () => step(-1));
  document.getElementById("fwd").addEventListener("click", () => step(1));
  slider.addEventListener("input", () => { setPlaying(false); show(parseInt(slider.value, 10)); simTime = times[frame]; });
  window.addEventListener("keydown", (e) => {
    if (e.target && e.target.tagName === "SELECT") return;
    if (e.key === " ") { e.preventDefault(); setPlaying(!playing); }
    else if (e.key === "ArrowLeft") step(-1);
    else if (e.key === "ArrowRight") step(1);
  });

  function render() {
    renderer.render(scene, camera);
    document.documentElement.setAttribute("data-view-projection", JSON.stringify(viewProjection()));
  }
  function viewProjection() { // column-major projection * view of the camera (tests project with it)
    camera.updateMatrixWorld(true);
    return new THREE.Matrix4().multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse).toArray();
  }
  function resize() {
    const w = host.clientWidth || 800, h = host.clientHeight || 600;
    renderer.setSize(w, h, false);
    document.documentElement.setAttribute("data-canvas-size", w + "x" + h);
    camera.aspect = w / h;
    camera.updateProjectionMatrix();
    render();
  }
  controls.addEventListener("change", render);
  window.addEventListener("resize", resize);
  resize();

  window.mbsimView = {
    setTime: (t) => { setPlaying(false); simTime = t; show(frameAt(t)); },
    frame: () => frame,
    viewProjection,
  };
  const tParam = params.get("t");
  if (tParam !== null && isFinite(parseFloat(tParam))) window.mbsimView.setTime(parseFloat(tParam));
  else show(0);
  const speedParam = parseFloat(params.get("speed"));
  if (isFinite(speedParam) && speedParam > 0) {
    const opt = document.createElement("option");
    opt.value = String(speedParam);
    opt.textContent = speedParam + "\u00d7";
    speedSel.appendChild(opt);
    speedSel.value = opt.value;
  }
  if (params.get("play") === "1") setPlaying(true);
  document.documentElement.setAttribute("data-ready", "1");
})();

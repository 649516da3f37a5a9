/* MetaCortex console: small conveniences on top of pages that work without script.
   Served from the console's own origin (the pages' CSP allows script-src 'self' and no
   inline script). Nothing here is needed to do anything: without it the text is still
   on the page to select, and "Select all" is a link the server answers.

   - Copy buttons: every element with data-copy="what it is" gets a "Copy" button after
     it that puts the element's text on the clipboard (navigator.clipboard where the page
     is a secure context, else the older copy command), and says so in a live region.
   - Select all: the browse page's "Select all" link ticks every memory of the page in
     place instead of loading the page again; a count says how many are ticked. */
(function () {
  "use strict";

  var status = null;

  function announce(message) {
    if (status === null) {
      status = document.createElement("p");
      status.className = "visually-hidden";
      status.setAttribute("role", "status");
      status.id = "copy-status";
      document.body.appendChild(status);
    }
    status.textContent = "";
    window.setTimeout(function () { status.textContent = message; }, 50);
  }

  function selectText(element) {
    var range = document.createRange();
    range.selectNodeContents(element);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  function copiedWithCommand(element) {
    selectText(element);
    try {
      return document.execCommand("copy");
    } catch (error) {
      return false;
    }
  }

  function copy(element, button, what) {
    var text = element.textContent;
    var done = function () {
      button.textContent = "Copied";
      button.classList.add("copied");
      announce("Copied " + what + " to the clipboard.");
      window.setTimeout(function () {
        button.textContent = "Copy";
        button.classList.remove("copied");
      }, 2500);
    };
    var failed = function () {
      selectText(element);
      announce("Could not copy: " + what + " is selected, press Ctrl+C (or ⌘C) to copy it.");
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () {
        if (copiedWithCommand(element)) { done(); } else { failed(); }
      });
    } else if (copiedWithCommand(element)) {
      done();
    } else {
      failed();
    }
  }

  function addCopyButtons() {
    var targets = document.querySelectorAll("[data-copy]");
    Array.prototype.forEach.call(targets, function (element) {
      var what = element.getAttribute("data-copy");
      var button = document.createElement("button");
      button.type = "button";
      button.className = "copy-button";
      button.textContent = "Copy";
      button.setAttribute("aria-label", "Copy " + what);
      button.addEventListener("click", function () { copy(element, button, what); });
      element.insertAdjacentElement("afterend", button);
      element.classList.add("has-copy");
    });
  }

  function setUpSelectAll() {
    var toggle = document.querySelector("[data-select-all]");
    if (toggle === null) { return; }
    var form = document.getElementById(toggle.getAttribute("data-select-all"));
    if (form === null) { return; }
    var boxes = form.querySelectorAll("input.select-item");
    var count = document.getElementById("selected-count");
    var button = document.createElement("button");
    button.type = "button";
    button.id = toggle.id;
    button.className = "select-all";
    toggle.replaceWith(button);

    var refresh = function () {
      var ticked = Array.prototype.filter.call(boxes, function (box) { return box.checked; });
      var all = ticked.length === boxes.length;
      button.textContent = all ? "Clear the selection" : "Select all " + boxes.length + " on this page";
      button.setAttribute("aria-pressed", all ? "true" : "false");
      if (count !== null) {
        count.textContent = ticked.length ? ticked.length + " selected" : "";
      }
    };
    button.addEventListener("click", function () {
      var all = Array.prototype.every.call(boxes, function (box) { return box.checked; });
      Array.prototype.forEach.call(boxes, function (box) { box.checked = !all; });
      refresh();
    });
    Array.prototype.forEach.call(boxes, function (box) {
      box.addEventListener("change", refresh);
    });
    refresh();
  }

  function focusCorrection() {
    var jump = document.getElementById("correct-jump");
    var box = document.getElementById("corrected_content");
    if (jump === null || box === null) { return; }
    jump.addEventListener("click", function () { window.setTimeout(function () { box.focus(); }, 0); });
  }

  function start() {
    addCopyButtons();
    setUpSelectAll();
    focusCorrection();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
}());
